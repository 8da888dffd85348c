// Package crdschema applies a CRD's schema and CEL rules in process, as the
// API server applies them. It is its own package, not part of testutil,
// because the webhook package's own tests use it and testutil imports the
// webhook package.
package crdschema

import (
	"context"
	"fmt"
	"os"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

// Schema is the schema of one CRD of config/crd/bases with its CEL rules,
// applied in process as the API server applies them: the schema's defaults
// when an object is decoded, then OpenAPI validation, the list-type
// invariants (unique map keys) and the x-kubernetes-validations rules before
// the validating webhooks. Fuzz targets
// use it to learn what the API server would admit without starting one.
type Schema struct {
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

// Load reads a CRD file with one served version, e.g.
// "../../config/crd/bases/harness.openclaw.dev_runtimepolicies.yaml" from a
// package directory, where go test runs.
func Load(file string) (*Schema, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Schema == nil {
		return nil, fmt.Errorf("%s: want one version with a schema", file)
	}
	var props apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, &props, nil); err != nil {
		return nil, fmt.Errorf("%s: convert the schema: %w", file, err)
	}
	s, err := structuralschema.NewStructural(&props)
	if err != nil {
		return nil, fmt.Errorf("%s: structural schema: %w", file, err)
	}
	v, _, err := apiservervalidation.NewSchemaValidator(&props)
	if err != nil {
		return nil, fmt.Errorf("%s: schema validator: %w", file, err)
	}
	return &Schema{structural: s, validator: v, cel: cel.NewValidator(s, true, celconfig.PerCallLimit)}, nil
}

// Default applies the schema's defaults to obj (a typed object), as the API
// server does when it decodes a request and again after mutating webhooks.
func (c *Schema) Default(obj runtime.Object) error {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	structuraldefaulting.Default(u, c.structural)
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u, obj)
}

// Validate returns what the schema and its CEL rules refuse in obj on
// create; empty means the API server would pass obj on to the validating
// webhooks.
func (c *Schema) Validate(ctx context.Context, obj runtime.Object) (field.ErrorList, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	errs := apiservervalidation.ValidateCustomResource(nil, u, c.validator)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, c.structural, u)...)
	if len(errs) > 0 {
		// The API server runs no CEL rule over values of the wrong shape.
		return errs, nil
	}
	celErrs, _ := c.cel.Validate(ctx, nil, c.structural, u, nil, celconfig.RuntimeCELCostBudget)
	return celErrs, nil
}

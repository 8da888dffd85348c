package httpapi

// The API checks every caller in the cluster's name (KubeAuthorizer): a
// TokenReview for who it is, a SubjectAccessReview for what it may do.
// Generated into the dispatcher's ClusterRole (`make manifests`).

// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

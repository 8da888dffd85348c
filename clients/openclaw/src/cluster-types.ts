// The fields of the cluster's objects that the plugin reads, as the API
// server serves them (api/v1alpha1; only what sessions and predictions use).

export type ObjectMeta = {
  name: string;
  namespace?: string;
  creationTimestamp?: string;
  labels?: Record<string, string>;
};

/** metav1.LabelSelector. */
export type LabelSelector = {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: string; values?: string[] }>;
};

export type AgentHarness = {
  metadata: ObjectMeta;
  spec: {
    harnessId?: string;
    adapter?: string;
    autoSelection?: { mode?: string; providers?: string[] };
    support?: {
      providers?: string[];
      priority?: number;
      requestTransportOverrides?: string;
      routePolicy?: string;
      nativeProviders?: string[];
      preparedAuth?: { subscriptionModes?: string[]; apiKeyModes?: string[] };
    };
    allowedNamespaces?: { from?: string; selector?: LabelSelector };
  };
};

export type RuntimePolicy = {
  metadata: ObjectMeta;
  spec: {
    namespaceSelector?: LabelSelector;
    sessionOverrides?: string;
    providers?: Array<{ provider: string; runtime?: string; models?: Array<{ id: string; runtime: string }> }>;
    models?: Array<{ ref: string; runtime: string }>;
    agents?: Array<{ agentId: string; models: Array<{ ref: string; runtime: string }> }>;
  };
};

export type Namespace = { metadata: ObjectMeta };

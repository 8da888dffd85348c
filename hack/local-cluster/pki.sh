#!/usr/bin/env bash
# pki.sh is sourced by hack/local-cluster.sh: the cluster's certificates (CA,
# serving and client certificates, signed with openssl) and kubeconfigs.
# shellcheck shell=bash

# sign NAME SUBJ EXT CA: key + cert NAME signed by CA (a prefix in PKI_DIR).
sign() {
  local name="$1" subj="$2" ext="$3" ca="$4"
  [[ -f "${PKI_DIR}/${name}.crt" ]] && return 0
  openssl genrsa -out "${PKI_DIR}/${name}.key" 2048 2>/dev/null
  openssl req -new -key "${PKI_DIR}/${name}.key" -subj "${subj}" -out "${PKI_DIR}/${name}.csr" 2>/dev/null
  printf '%s\n' "${ext}" >"${PKI_DIR}/${name}.ext"
  openssl x509 -req -in "${PKI_DIR}/${name}.csr" -CA "${PKI_DIR}/${ca}.crt" -CAkey "${PKI_DIR}/${ca}.key" \
    -CAcreateserial -days 3650 -sha256 -extfile "${PKI_DIR}/${name}.ext" -out "${PKI_DIR}/${name}.crt" 2>/dev/null
  rm -f "${PKI_DIR}/${name}.csr" "${PKI_DIR}/${name}.ext"
}

make_ca() {
  local name="$1" cn="$2"
  [[ -f "${PKI_DIR}/${name}.crt" ]] && return 0
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "${PKI_DIR}/${name}.key" -out "${PKI_DIR}/${name}.crt" \
    -days 3650 -sha256 -subj "/CN=${cn}" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
}

# gen_pki creates what is missing; an existing PKI is reused across up/down.
gen_pki() {
  mkdir -p "${PKI_DIR}"
  chmod 700 "${PKI_DIR}"
  local client="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
  local server="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth"
  make_ca ca local-cluster-ca
  make_ca front-proxy-ca local-cluster-front-proxy-ca
  # A certificate from before the API server listened on the gateway lacks it.
  if [[ -f "${PKI_DIR}/apiserver.crt" ]]; then
    local san
    san="$(openssl x509 -noout -ext subjectAltName -in "${PKI_DIR}/apiserver.crt")"
    [[ "${san//[[:space:]]/}," == *"IPAddress:${GATEWAY_IP},"* ]] || rm -f "${PKI_DIR}/apiserver.crt" "${PKI_DIR}/apiserver.key"
  fi
  # Pods reach the API server as https://kubernetes.default.svc (the Service IP)
  # or at the gateway address; host clients use the gateway address too.
  sign apiserver "/CN=kube-apiserver" "${server}
subjectAltName=IP:127.0.0.1,IP:${GATEWAY_IP},IP:${SERVICE_IP},DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local" ca
  sign admin "/O=system:masters/CN=admin" "${client}" ca
  sign kube-controller-manager "/CN=system:kube-controller-manager" "${client}" ca
  sign kube-scheduler "/CN=system:kube-scheduler" "${client}" ca
  # The node: kubelet's client identity (the Node authorizer and NodeRestriction
  # know it by name), its serving certificate (the API server verifies it for
  # logs and exec), kube-proxy's identity (bound to system:node-proxier by
  # default), and the API server's client certificate towards kubelet.
  sign kubelet "/O=system:nodes/CN=system:node:${NODE_NAME}" "${client}" ca
  sign kubelet-serving "/O=system:nodes/CN=system:node:${NODE_NAME}" "${server}
subjectAltName=IP:${NODE_IP},IP:127.0.0.1,DNS:${NODE_NAME}" ca
  sign kube-proxy "/CN=system:kube-proxy" "${client}" ca
  sign apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "${client}" ca
  # The API server authenticates to aggregated API servers (and they trust it)
  # through the front-proxy CA: the requestheader chain.
  sign front-proxy-client "/CN=front-proxy-client" "${client}" front-proxy-ca
  if [[ ! -f "${PKI_DIR}/sa.key" ]]; then
    openssl genrsa -out "${PKI_DIR}/sa.key" 2048 2>/dev/null
    openssl rsa -in "${PKI_DIR}/sa.key" -pubout -out "${PKI_DIR}/sa.pub" 2>/dev/null
  fi
  chmod 600 "${PKI_DIR}"/*.key
}

# write_kubeconfig FILE CERT: a kubeconfig with the client cert embedded, so it
# can be copied elsewhere.
write_kubeconfig() {
  local file="$1" cert="$2"
  (
    umask 077
    cat >"${file}" <<KC
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://${GATEWAY_IP}:${APISERVER_PORT}
    certificate-authority-data: $(base64 -w0 <"${PKI_DIR}/ca.crt")
users:
- name: ${cert}
  user:
    client-certificate-data: $(base64 -w0 <"${PKI_DIR}/${cert}.crt")
    client-key-data: $(base64 -w0 <"${PKI_DIR}/${cert}.key")
contexts:
- name: local
  context:
    cluster: local
    user: ${cert}
current-context: local
KC
  )
}

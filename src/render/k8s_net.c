/* The network side of `render --format k8s`: the proxy (Deployment running `agentrun
 * proxy` with the policy's allow-list, plus its Service), the NetworkPolicies that play
 * the part of docker's internal network, and with --cilium a CiliumNetworkPolicy that
 * allows the proxy only the allow-list's names (a second wall behind the proxy). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Where a pod may not go by address: private, shared, loopback, link-local (the cloud
 * metadata service 169.254.169.254 is in it) and their IPv6 counterparts. */
static const char *const private4[] = {"10.0.0.0/8",	 "100.64.0.0/10", "127.0.0.0/8",
				       "169.254.0.0/16", "172.16.0.0/12", "192.168.0.0/16"};
static const char *const private6[] = {"fc00::/7", "fe80::/10", "::1/128"};

/* proxy.allow_private takes bare addresses too; ipBlock and toCIDR want a prefix. */
static void cidr_item(struct kn *parent, const char *key, const char *range)
{
	if (strchr(range, '/') != NULL)
		kn_str(parent, key, range);
	else
		kn_strf(parent, key, "%s/%d", range, strchr(range, ':') != NULL ? 128 : 32);
}

/* Secrets (docs/secrets.md): every value is a key of the Secret NAME-secrets, mounted
 * into the proxy alone; the agent holds the placeholders (the spec's, fresh per
 * rendering) and fetches the CA bundle from the proxy (its init container). */
static void proxy_secret_args(struct k8s_ctx *c, struct kn *args)
{
	const struct ar_policy *p = c->p;
	for (size_t i = 0; i < p->n_secrets; i++) {
		const struct ar_secret_spec *x = &p->secrets[i];
		kn_str(args, NULL, "--secret");
		kn_strf(args, NULL, "%s=file:%s/%s", x->name, AR_RENDER_SECRETS_DIR, x->name);
		for (size_t k = 0; k < x->n_hosts; k++) {
			kn_str(args, NULL, "--secret-host");
			kn_strf(args, NULL, "%s=%s", x->name, x->hosts[k]);
		}
		kn_str(args, NULL, "--secret-placeholder");
		kn_strf(args, NULL, "%s=%s", x->name, ar_spec_getenv(c->sp, x->name));
	}
	if (p->n_secrets > 0 && p->proxy.upstream_ca != NULL) {
		kn_str(args, NULL, "--upstream-ca");
		kn_str(args, NULL, AR_RENDER_SECRETS_DIR "/upstream-ca.pem");
	}
}

/* The Secret the operator makes (render never holds a value): one key per secret. */
static void secret_volume(struct k8s_ctx *c, struct kn *vols)
{
	const struct ar_policy *p = c->p;
	ar_autobuf struct ar_buf keys = {0};
	for (size_t i = 0; i < p->n_secrets; i++)
		ar_buf_printf(&keys, " --from-file=%s=FILE", p->secrets[i].name);
	if (p->proxy.upstream_ca != NULL)
		ar_buf_printf(&keys, " --from-file=upstream-ca.pem=%s", p->proxy.upstream_ca);
	struct kn *v = kn_map(vols, NULL);
	kn_note(kn_str(v, "name", "secrets"),
		"secrets: the values, for the proxy alone; create the Secret first: kubectl -n "
		"%s create secret generic %s-secrets%s",
		c->ns, p->name, keys.data);
	struct kn *sv = kn_map(v, "secret");
	kn_strf(sv, "secretName", "%s-secrets", p->name);
	kn_int(sv, "defaultMode", K8S_SECRET_MODE);
}

static void proxy_args(struct k8s_ctx *c, struct kn *ctr)
{
	const struct ar_policy *p = c->p;
	struct kn *args = kn_list(ctr, "args");
	kn_note(args, "allowed_hosts, proxy.budgets, proxy.sni, proxy.allow_private");
	kn_str(args, NULL, "proxy");
	kn_str(args, NULL, "--listen");
	kn_strf(args, NULL, "0.0.0.0:%d", p->proxy.port);
	/* the container has a CPU limit (small_resources): polling would spend its quota,
	 * and a throttled proxy stalls every connection (docs/proxy.md, "Busy polling") */
	kn_note(kn_str(args, NULL, "--busy-poll"), "no busy polling under the CPU limit");
	kn_str(args, NULL, "0");
	for (size_t i = 0; i < p->n_allowed_hosts; i++) {
		kn_str(args, NULL, "--allow");
		kn_str(args, NULL, p->allowed_hosts[i]);
	}
	for (size_t i = 0; i < p->proxy.n_budgets; i++) {
		kn_str(args, NULL, "--max-bytes-out");
		kn_strf(args, NULL, "%s=%" PRId64, p->proxy.budgets[i].host,
			p->proxy.budgets[i].max_bytes_out);
	}
	kn_str(args, NULL, "--sni");
	kn_str(args, NULL, ar_policy_sni_word(p->proxy.sni));
	for (size_t i = 0; i < p->proxy.n_allow_private; i++) {
		kn_str(args, NULL, "--allow-private");
		kn_str(args, NULL, p->proxy.allow_private[i]);
	}
	proxy_secret_args(c, args);
	kn_str(args, NULL, "--audit");
	kn_str(args, NULL, AR_RENDER_AUDIT_FILE);
}

static void small_resources(struct kn *ctr)
{
	struct kn *res = kn_map(ctr, "resources");
	static const char *const kinds[] = {"limits", "requests"};
	for (size_t i = 0; i < AR_ARRAY_SIZE(kinds); i++) {
		struct kn *m = kn_map(res, kinds[i]);
		kn_str(m, "cpu", K8S_PROXY_CPU);
		kn_str(m, "memory", K8S_PROXY_MEMORY);
	}
}

static void mount(struct kn *ctr, const char *name, const char *path, bool ro)
{
	struct kn *mounts = kn_get(ctr, "volumeMounts");
	if (mounts == NULL)
		mounts = kn_list(ctr, "volumeMounts");
	struct kn *m = kn_map(mounts, NULL);
	kn_str(m, "name", name);
	kn_str(m, "mountPath", path);
	if (ro)
		kn_bool(m, "readOnly", true);
}

static void proxy_containers(struct k8s_ctx *c, struct kn *ps)
{
	struct kn *ctrs = kn_list(ps, "containers");
	struct kn *ctr = kn_map(ctrs, NULL);
	kn_str(ctr, "name", "proxy");
	kn_note(kn_str(ctr, "image", c->proxy_image),
		"--proxy-image: an image with agentrun as its entrypoint");
	proxy_args(c, ctr);
	struct kn *port = kn_map(kn_list(ctr, "ports"), NULL);
	kn_str(port, "name", "proxy");
	kn_int(port, "containerPort", c->p->proxy.port);
	kn_str(port, "protocol", "TCP");
	small_resources(ctr);
	k8s_container_security(ctr, c->p);
	mount(ctr, "audit", AR_RENDER_AUDIT_DIR, false);
	mount(ctr, "tmp", "/tmp", false);
	if (c->p->n_secrets > 0)
		mount(ctr, "secrets", AR_RENDER_SECRETS_DIR, true);

	struct kn *tail = kn_map(ctrs, NULL);
	kn_note(kn_str(tail, "name", "audit"), "the audit log to stdout: kubectl logs -c audit");
	kn_str(tail, "image", K8S_BUSYBOX_IMAGE);
	struct kn *cmd = kn_list(tail, "command");
	static const char *const argv[] = {"tail", "-n", "+1", "-F", AR_RENDER_AUDIT_FILE};
	for (size_t i = 0; i < AR_ARRAY_SIZE(argv); i++)
		kn_str(cmd, NULL, argv[i]);
	small_resources(tail);
	k8s_container_security(tail, c->p);
	mount(tail, "audit", AR_RENDER_AUDIT_DIR, true);

	struct kn *vols = kn_list(ps, "volumes");
	static const char *const names[] = {"audit", "tmp"};
	for (size_t i = 0; i < AR_ARRAY_SIZE(names); i++) {
		struct kn *v = kn_map(vols, NULL);
		kn_str(v, "name", names[i]);
		struct kn *ed = kn_map(v, "emptyDir");
		if (i == 1)
			kn_str(ed, "medium", "Memory");
		kn_str(ed, "sizeLimit", i == 0 ? "256Mi" : "16Mi");
	}
	if (c->p->n_secrets > 0)
		secret_volume(c, vols);
}

static void proxy_deployment(struct k8s_ctx *c)
{
	struct kn *o = k8s_object(c, "apps/v1", "Deployment", c->p->proxy_name, "proxy",
				  "network proxy, allowed_hosts, proxy");
	struct kn *spec = kn_map(o, "spec");
	kn_int(spec, "replicas", 1);
	k8s_selector_labels(kn_map(kn_map(spec, "selector"), "matchLabels"), c->p, "proxy");
	struct kn *tmpl = kn_map(spec, "template");
	k8s_selector_labels(kn_map(kn_map(tmpl, "metadata"), "labels"), c->p, "proxy");
	struct kn *ps = kn_map(tmpl, "spec");
	kn_bool(ps, "automountServiceAccountToken", false);
	kn_bool(ps, "enableServiceLinks", false);
	kn_bool(ps, "hostNetwork", false);
	kn_bool(ps, "hostPID", false);
	kn_bool(ps, "hostIPC", false);
	if (c->k->runtime_class != NULL)
		kn_str(ps, "runtimeClassName", c->k->runtime_class);
	struct kn *sc = kn_map(ps, "securityContext");
	kn_bool(sc, "runAsNonRoot", true);
	kn_int(sc, "runAsUser", K8S_PROXY_UID);
	kn_int(sc, "runAsGroup", K8S_PROXY_UID);
	kn_int(sc, "fsGroup", K8S_PROXY_UID);
	k8s_seccomp_profile(sc, NULL);
	proxy_containers(c, ps);
}

static void proxy_service(struct k8s_ctx *c)
{
	struct kn *o =
	    k8s_object(c, "v1", "Service", c->p->proxy_name, "proxy", "network proxy, proxy.port");
	kn_note(o, "The agent's HTTP(S)_PROXY is %s: this Service's name.", c->p->proxy_url);
	struct kn *spec = kn_map(o, "spec");
	kn_str(spec, "type", "ClusterIP");
	k8s_selector_labels(kn_map(spec, "selector"), c->p, "proxy");
	struct kn *port = kn_map(kn_list(spec, "ports"), NULL);
	kn_str(port, "name", "proxy");
	kn_int(port, "port", c->p->proxy.port);
	kn_str(port, "targetPort", "proxy");
	kn_str(port, "protocol", "TCP");
}

void k8s_proxy_objects(struct k8s_ctx *c)
{
	proxy_deployment(c);
	proxy_service(c);
}

/* {to: [kube-dns in kube-system], ports: 53/UDP, 53/TCP} */
static void dns_rule(struct kn *egress)
{
	struct kn *rule = kn_map(egress, NULL);
	kn_note(rule, "cluster DNS (kube-dns in kube-system; a node-local DNS cache needs its "
		      "own rule)");
	struct kn *peer = kn_map(kn_list(rule, "to"), NULL);
	kn_str(kn_map(kn_map(peer, "namespaceSelector"), "matchLabels"),
	       "kubernetes.io/metadata.name", "kube-system");
	kn_str(kn_map(kn_map(peer, "podSelector"), "matchLabels"), "k8s-app", "kube-dns");
	struct kn *ports = kn_list(rule, "ports");
	static const char *const protos[] = {"UDP", "TCP"};
	for (size_t i = 0; i < AR_ARRAY_SIZE(protos); i++) {
		struct kn *port = kn_map(ports, NULL);
		kn_str(port, "protocol", protos[i]);
		kn_int(port, "port", 53);
	}
}

static void peer_rule(struct kn *list, const struct ar_policy *p, const char *component, int port)
{
	struct kn *rule = kn_map(list, NULL);
	struct kn *peers = kn_list(rule, strcmp(component, "agent") == 0 ? "from" : "to");
	k8s_selector_labels(kn_map(kn_map(kn_map(peers, NULL), "podSelector"), "matchLabels"), p,
			    component);
	struct kn *pp = kn_map(kn_list(rule, "ports"), NULL);
	kn_str(pp, "protocol", "TCP");
	kn_int(pp, "port", port);
}

static struct kn *netpol(struct k8s_ctx *c, const char *name, const char *component,
			 const char *from, bool ingress, bool egress)
{
	struct kn *o =
	    k8s_object(c, "networking.k8s.io/v1", "NetworkPolicy", name, component, from);
	struct kn *spec = kn_map(o, "spec");
	k8s_selector_labels(kn_map(kn_map(spec, "podSelector"), "matchLabels"), c->p, component);
	struct kn *types = kn_list(spec, "policyTypes");
	if (ingress)
		kn_str(types, NULL, "Ingress");
	if (egress)
		kn_str(types, NULL, "Egress");
	return spec;
}

static void agent_policy(struct k8s_ctx *c)
{
	const struct ar_policy *p = c->p;
	struct kn *spec = netpol(c, p->agent_name, "agent", "network", true, true);
	kn_note(kn_list(spec, "ingress"), "nothing may connect to the agent");
	struct kn *egress = kn_list(spec, "egress");
	if (p->network == AR_NETWORK_NONE) {
		kn_note(egress, "network none: no egress at all (a pod still has loopback)");
		return;
	}
	kn_note(egress, "network proxy: only the proxy pods on proxy.port (docker's "
			"--internal network) and cluster DNS");
	peer_rule(egress, p, "proxy", p->proxy.port);
	dns_rule(egress);
}

static void except_block(struct kn *egress_to, const char *cidr, const char *const *except,
			 size_t n)
{
	struct kn *blk = kn_map(kn_map(egress_to, NULL), "ipBlock");
	kn_str(blk, "cidr", cidr);
	struct kn *ex = kn_list(blk, "except");
	for (size_t i = 0; i < n; i++)
		kn_str(ex, NULL, except[i]);
}

static void proxy_policy(struct k8s_ctx *c)
{
	const struct ar_policy *p = c->p;
	char name[AR_POLICY_NAME_MAX + 32];
	snprintf(name, sizeof(name), "%s-proxy", p->name);
	bool egress = !c->k->cilium;
	struct kn *spec =
	    netpol(c, name, "proxy", "network proxy, proxy.allow_private", true, egress);
	peer_rule(kn_list(spec, "ingress"), p, "agent", p->proxy.port);
	if (!egress) {
		kn_note(spec, "--cilium: the proxy's egress is the CiliumNetworkPolicy alone "
			      "(policies add up: a broad rule here would undo it)");
		return;
	}
	struct kn *list = kn_list(spec, "egress");
	struct kn *rule = kn_map(list, NULL);
	kn_note(rule, "anywhere but private, loopback, link-local and metadata ranges (the proxy "
		      "also refuses names that resolve there)");
	struct kn *to = kn_list(rule, "to");
	except_block(to, "0.0.0.0/0", private4, AR_ARRAY_SIZE(private4));
	except_block(to, "::/0", private6, AR_ARRAY_SIZE(private6));
	for (size_t i = 0; i < p->proxy.n_allow_private; i++) {
		struct kn *r = kn_map(list, NULL);
		if (i == 0)
			kn_note(r, "proxy.allow_private");
		struct kn *blk = kn_map(kn_map(kn_list(r, "to"), NULL), "ipBlock");
		cidr_item(blk, "cidr", p->proxy.allow_private[i]);
	}
	dns_rule(list);
}

void k8s_network_policies(struct k8s_ctx *c)
{
	agent_policy(c);
	if (c->p->network == AR_NETWORK_PROXY)
		proxy_policy(c);
}

/* ---- Cilium ---- */

/* Split an allow-list rule into host and port ("*.x.com:443", "[::1]:8443", "::1"). */
static void split_rule(const char *rule, char *host, size_t size, int *port)
{
	*port = 0;
	const char *colon = strrchr(rule, ':');
	bool bracket = rule[0] == '[';
	bool bare6 = !bracket && colon != NULL && strchr(rule, ':') != colon;
	size_t n = strlen(rule);
	if (colon != NULL && !bare6 && (!bracket || colon[-1] == ']')) {
		*port = atoi(colon + 1);
		n = (size_t)(colon - rule);
	}
	if (bracket && n >= 2 && rule[n - 1] == ']') {
		rule++;
		n -= 2;
	}
	snprintf(host, size, "%.*s", (int)n, rule);
}

static void fqdn_ports(struct kn *rule, int port)
{
	struct kn *ports = kn_list(kn_map(kn_list(rule, "toPorts"), NULL), "ports");
	int web[] = {443, 80};
	for (size_t i = 0; i < (port != 0 ? 1 : AR_ARRAY_SIZE(web)); i++) {
		struct kn *pp = kn_map(ports, NULL);
		kn_strf(pp, "port", "%d", port != 0 ? port : web[i]);
		kn_str(pp, "protocol", "TCP");
	}
}

static void fqdn_rule(struct kn *egress, const char *allowed)
{
	char host[300];
	int port;
	unsigned char addr[16];
	split_rule(allowed, host, sizeof(host), &port);
	struct kn *rule = kn_map(egress, NULL);
	kn_note(rule, "allowed_hosts %s", allowed);
	if (inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1) {
		kn_strf(kn_list(rule, "toCIDR"), NULL, "%s/%d", host,
			strchr(host, ':') != NULL ? 128 : 32);
	} else if (strcmp(host, "*") == 0) {
		kn_str(kn_list(rule, "toEntities"), NULL, "world");
	} else {
		struct kn *m = kn_map(kn_list(rule, "toFQDNs"), NULL);
		kn_str(m, host[0] == '*' ? "matchPattern" : "matchName", host);
	}
	fqdn_ports(rule, port);
}

static void cilium_dns_rule(struct kn *egress)
{
	struct kn *rule = kn_map(egress, NULL);
	kn_note(rule, "toFQDNs needs Cilium's DNS proxy to see the lookups");
	struct kn *sel = kn_map(kn_map(kn_list(rule, "toEndpoints"), NULL), "matchLabels");
	kn_str(sel, "k8s:io.kubernetes.pod.namespace", "kube-system");
	kn_str(sel, "k8s:k8s-app", "kube-dns");
	struct kn *tp = kn_map(kn_list(rule, "toPorts"), NULL);
	struct kn *ports = kn_list(tp, "ports");
	static const char *const protos[] = {"UDP", "TCP"};
	for (size_t i = 0; i < AR_ARRAY_SIZE(protos); i++) {
		struct kn *pp = kn_map(ports, NULL);
		kn_str(pp, "port", "53");
		kn_str(pp, "protocol", protos[i]);
	}
	struct kn *dns = kn_map(kn_list(kn_map(tp, "rules"), "dns"), NULL);
	kn_str(dns, "matchPattern", "*");
}

void k8s_cilium_policy(struct k8s_ctx *c)
{
	const struct ar_policy *p = c->p;
	char name[AR_POLICY_NAME_MAX + 32];
	snprintf(name, sizeof(name), "%s-proxy-fqdn", p->name);
	struct kn *o = k8s_object(c, "cilium.io/v2", "CiliumNetworkPolicy", name, "proxy",
				  "allowed_hosts, proxy.allow_private");
	struct kn *spec = kn_map(o, "spec");
	k8s_selector_labels(kn_map(kn_map(spec, "endpointSelector"), "matchLabels"), p, "proxy");
	struct kn *egress = kn_list(spec, "egress");
	cilium_dns_rule(egress);
	for (size_t i = 0; i < p->n_allowed_hosts; i++)
		fqdn_rule(egress, p->allowed_hosts[i]);
	for (size_t i = 0; i < p->proxy.n_allow_private; i++) {
		struct kn *rule = kn_map(egress, NULL);
		kn_note(rule, "proxy.allow_private %s", p->proxy.allow_private[i]);
		cidr_item(kn_list(rule, "toCIDR"), NULL, p->proxy.allow_private[i]);
	}
	struct kn *deny = kn_map(kn_list(spec, "egressDeny"), NULL);
	kn_note(deny, "the metadata service, whatever a name resolves to");
	struct kn *cidrs = kn_list(deny, "toCIDR");
	kn_str(cidrs, NULL, "169.254.169.254/32");
	kn_str(cidrs, NULL, "fd00:ec2::254/128");
}

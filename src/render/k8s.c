/* `agentrun render --format k8s|k8s-json`: the agent spec as Kubernetes objects (a
 * restricted Namespace, the agent's ServiceAccount, kubeconfig and Job; the proxy and
 * the NetworkPolicies are in k8s_net.c). The agent's container is the spec's
 * (ar_spec_build_container); the proxy and network objects the policy's. Every object
 * says which policy fields it comes from, in an annotation and, in YAML, in comments.
 * See docs/k8s.md. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define JOB_TTL_SECONDS	  3600
#define TOKEN_SECONDS	  3600
#define TOKEN_AUDIENCE	  "https://kubernetes.default.svc.cluster.local"
#define CREDENTIALS_DIR	  AR_K8S_SECRETS_DIR
#define SECCOMP_NODE_DIR  "/var/lib/kubelet/seccomp"
#define SECCOMP_LOCAL_DIR "agentrun"

static const struct {
	const char *name;
	enum ar_render_format format;
} k8s_formats[] = {
    {"k8s", AR_RENDER_K8S},
    {"k8s-json", AR_RENDER_K8S_JSON},
};

int ar_render_k8s_format_parse(const char *s, enum ar_render_format *out)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(k8s_formats); i++) {
		if (strcmp(s, k8s_formats[i].name) == 0) {
			*out = k8s_formats[i].format;
			return 0;
		}
	}
	return -1;
}

void k8s_selector_labels(struct kn *labels, const struct ar_policy *p, const char *component)
{
	kn_str(labels, AR_K8S_LABEL_NAME, p->name);
	kn_str(labels, AR_K8S_LABEL_COMPONENT, component);
}

struct kn *k8s_object(struct k8s_ctx *c, const char *api, const char *kind, const char *name,
		      const char *component, const char *from)
{
	struct kn *o = kn_new_map();
	c->objs = ar_xrealloc(c->objs, (c->n_objs + 1) * sizeof(*c->objs));
	c->objs[c->n_objs++] = o;
	kn_str(o, "apiVersion", api);
	kn_str(o, "kind", kind);
	struct kn *meta = kn_map(o, "metadata");
	kn_str(meta, "name", name);
	if (strcmp(kind, "Namespace") != 0)
		kn_str(meta, "namespace", c->ns);
	struct kn *labels = kn_map(meta, "labels");
	k8s_selector_labels(labels, c->p, component);
	kn_str(labels, AR_K8S_LABEL_MANAGED, "agentrun");
	struct kn *ann = kn_map(meta, "annotations");
	kn_str(ann, "agentrun.dev/policy", c->p->name);
	kn_str(ann, AR_K8S_ANNOTATION_FROM, from);
	kn_note(o, "%s/%s from policy %s: %s", kind, name, c->p->name, from);
	return o;
}

/* 268435456 -> "256Mi": the largest binary suffix that divides exactly. */
static void quantity_bytes(int64_t v, char *out, size_t size)
{
	static const struct {
		const char *suffix;
		int shift;
	} units[] = {{"Ti", 40}, {"Gi", 30}, {"Mi", 20}, {"Ki", 10}};
	for (size_t i = 0; i < AR_ARRAY_SIZE(units); i++) {
		int64_t unit = INT64_C(1) << units[i].shift;
		if (v >= unit && v % unit == 0) {
			snprintf(out, size, "%" PRId64 "%s", v / unit, units[i].suffix);
			return;
		}
	}
	snprintf(out, size, "%" PRId64, v);
}

/* 1000 -> "1", 500 -> "500m". */
static void quantity_cpu(int64_t milli, char *out, size_t size)
{
	if (milli % 1000 == 0)
		snprintf(out, size, "%" PRId64, milli / 1000);
	else
		snprintf(out, size, "%" PRId64 "m", milli);
}

static void namespace_object(struct k8s_ctx *c)
{
	struct kn *o = k8s_object(c, "v1", "Namespace", c->ns, "namespace",
				  "name (Pod Security Admission: restricted)");
	struct kn *labels = kn_get(kn_get(o, "metadata"), "labels");
	static const char *const modes[] = {"enforce", "audit", "warn"};
	for (size_t i = 0; i < AR_ARRAY_SIZE(modes); i++) {
		char key[64];
		snprintf(key, sizeof(key), "pod-security.kubernetes.io/%s", modes[i]);
		kn_str(labels, key, "restricted");
	}
	kn_str(labels, "pod-security.kubernetes.io/enforce-version", "latest");
}

static void service_account(struct k8s_ctx *c)
{
	struct kn *o = k8s_object(c, "v1", "ServiceAccount", c->p->agent_name, "agent",
				  c->p->kubeconfig != NULL ? "kubeconfig" : "name");
	kn_note(kn_bool(o, "automountServiceAccountToken", false),
		"no token unless the policy has a kubeconfig, and then a projected one");
	if (c->p->kubeconfig != NULL)
		kn_note(o, "Grant this ServiceAccount what the agent may do (a Role and "
			   "RoleBinding); nothing is granted here.");
}

/* Whether the allow-list lets the generated kubeconfig reach the API server. */
static bool allows_api_server(const struct ar_policy *p)
{
	static const char *const rules[] = {"kubernetes.default.svc:443",
					    "kubernetes.default.svc.cluster.local:443"};
	for (size_t i = 0; i < p->n_allowed_hosts; i++)
		for (size_t k = 0; k < AR_ARRAY_SIZE(rules); k++)
			if (strcmp(p->allowed_hosts[i], rules[k]) == 0)
				return true;
	return false;
}

static void kubeconfig_configmap(struct k8s_ctx *c)
{
	char name[AR_POLICY_NAME_MAX + 32];
	snprintf(name, sizeof(name), "%s-kubeconfig", c->p->name);
	struct kn *o = k8s_object(c, "v1", "ConfigMap", name, "agent", "kubeconfig");
	kn_note(o,
		"Instead of %s from the operator's disk: a kubeconfig that uses the "
		"pod's own short-lived token",
		c->p->kubeconfig);
	kn_note(o, "(kubectl create token --duration=1h, done by the kubelet).");
	if (!allows_api_server(c->p))
		kn_note(
		    o, "Its server goes through the proxy: add kubernetes.default.svc:443 to "
		       "allowed_hosts and the API server's endpoint range to proxy.allow_private.");
	struct kn *data = kn_map(o, "data");
	kn_strf(data, "config",
		"apiVersion: v1\nkind: Config\nclusters:\n- name: in-cluster\n  cluster:\n"
		"    server: https://kubernetes.default.svc\n"
		"    certificate-authority: %s/ca.crt\n"
		"users:\n- name: %s\n  user:\n    tokenFile: %s/token\n"
		"contexts:\n- name: in-cluster\n  context:\n    cluster: in-cluster\n"
		"    user: %s\n    namespace: %s\ncurrent-context: in-cluster\n",
		CREDENTIALS_DIR, c->p->agent_name, CREDENTIALS_DIR, c->p->agent_name, c->ns);
}

void k8s_seccomp_profile(struct kn *sc, const struct ar_policy *p)
{
	struct kn *s = kn_map(sc, "seccompProfile");
	if (p == NULL) {
		kn_str(s, "type", "RuntimeDefault");
	} else if (p->seccomp == NULL || strcmp(p->seccomp, "default") == 0) {
		kn_note(s, "seccomp default: the container runtime's default profile (close to "
			   "agentrun's; for agentrun's own, point `seccomp` at a copy)");
		kn_str(s, "type", "RuntimeDefault");
	} else if (strcmp(p->seccomp, "unconfined") == 0) {
		kn_note(s, "seccomp unconfined: Pod Security `restricted` refuses this pod");
		kn_str(s, "type", "Unconfined");
	} else {
		const char *base = strrchr(p->seccomp, '/');
		base = base != NULL ? base + 1 : p->seccomp;
		kn_note(s, "seccomp %s: copy it to every node as %s/%s/%s", p->seccomp,
			SECCOMP_NODE_DIR, SECCOMP_LOCAL_DIR, base);
		kn_str(s, "type", "Localhost");
		kn_strf(s, "localhostProfile", "%s/%s", SECCOMP_LOCAL_DIR, base);
	}
}

void k8s_container_security(struct kn *container, const struct ar_policy *p)
{
	struct kn *sc = kn_map(container, "securityContext");
	kn_note(kn_bool(sc, "allowPrivilegeEscalation", false), "no_new_privs, as `run` sets it");
	kn_bool(sc, "privileged", false);
	kn_bool(sc, "readOnlyRootFilesystem", true);
	kn_bool(sc, "runAsNonRoot", true);
	struct kn *caps = kn_map(sc, "capabilities");
	kn_str(kn_list(caps, "drop"), NULL, "ALL");
}

static void pod_security(struct kn *spec, const struct ar_spec *sp)
{
	struct kn *sc = kn_map(spec, "securityContext");
	kn_note(kn_bool(sc, "runAsNonRoot", true), "user %s", sp->p->user);
	kn_int(sc, "runAsUser", sp->uid);
	kn_int(sc, "runAsGroup", sp->gid);
	kn_int(sc, "fsGroup", sp->gid);
	k8s_seccomp_profile(sc, sp->p);
}

static void env_var(struct kn *env, const char *name, const char *value)
{
	struct kn *e = kn_map(env, NULL);
	kn_str(e, "name", name);
	kn_str(e, "value", value);
}

/* The spec's container environment: the proxy variables, the policy's env, KUBECONFIG. */
static void agent_env(struct k8s_ctx *c, struct kn *container)
{
	struct kn *env = kn_list(container, "env");
	if (c->sp->net.mode == AR_NETWORK_PROXY)
		kn_note(env,
			"network proxy: the proxy Service %s (the NetworkPolicy, not these "
			"variables, is what enforces it)",
			c->p->proxy_name);
	for (char **e = c->sp->container_env; *e != NULL; e++) {
		const char *eq = strchr(*e, '=');
		ar_autofree char *key = ar_xstrndup(*e, (size_t)(eq - *e));
		env_var(env, key, eq + 1);
	}
}

static void agent_resources(struct k8s_ctx *c, struct kn *container)
{
	char memory[32], cpu[32];
	quantity_bytes(c->sp->limits.memory, memory, sizeof(memory));
	quantity_cpu(c->sp->limits.cpus_milli, cpu, sizeof(cpu));
	struct kn *res = kn_map(container, "resources");
	kn_note(res, "limits.memory %s, limits.cpus %s; requests = limits (Guaranteed QoS)",
		c->p->limits.memory_str, c->p->limits.cpus_str);
	kn_note(res,
		"limits.pids %" PRId64 ": no pod field; the kubelet's podPidsLimit "
		"(a node setting) applies",
		c->sp->limits.pids);
	static const char *const kinds[] = {"limits", "requests"};
	for (size_t i = 0; i < AR_ARRAY_SIZE(kinds); i++) {
		struct kn *m = kn_map(res, kinds[i]);
		kn_str(m, "cpu", cpu);
		kn_str(m, "memory", memory);
	}
}

static void volume_mount(struct kn *mounts, const char *name, const char *path, bool ro,
			 const char *sub)
{
	struct kn *m = kn_map(mounts, NULL);
	kn_str(m, "name", name);
	kn_str(m, "mountPath", path);
	if (ro)
		kn_bool(m, "readOnly", true);
	if (sub != NULL)
		kn_str(m, "subPath", sub);
}

static void tmpfs_volumes(struct k8s_ctx *c, struct kn *vols, struct kn *mounts)
{
	char size[32];
	quantity_bytes(c->sp->limits.memory, size, sizeof(size));
	for (size_t i = 0, n = 0; i < c->sp->n_mounts; i++) {
		const struct ar_spec_mount *m = &c->sp->mounts[i];
		if (m->kind != AR_SPEC_MNT_TMPFS)
			continue;
		char name[32];
		snprintf(name, sizeof(name), "tmpfs-%zu", n++);
		struct kn *v = kn_map(vols, NULL);
		kn_note(kn_str(v, "name", name),
			"tmpfs %s: memory-backed, counted against the memory limit", m->target);
		struct kn *ed = kn_map(v, "emptyDir");
		kn_str(ed, "medium", "Memory");
		kn_str(ed, "sizeLimit", size);
		volume_mount(mounts, name, m->target, false, NULL);
	}
}

static void credential_volume(struct k8s_ctx *c, struct kn *vols, struct kn *mounts)
{
	const struct ar_policy *p = c->p;
	struct kn *v = kn_map(vols, NULL);
	kn_note(kn_str(v, "name", "credentials"),
		"kubeconfig: a projected token (%d s, renewed by the kubelet), the cluster CA "
		"and the generated kubeconfig",
		TOKEN_SECONDS);
	struct kn *proj = kn_map(v, "projected");
	struct kn *srcs = kn_list(proj, "sources");
	struct kn *tok = kn_map(kn_map(srcs, NULL), "serviceAccountToken");
	kn_str(tok, "audience", TOKEN_AUDIENCE);
	kn_int(tok, "expirationSeconds", TOKEN_SECONDS);
	kn_str(tok, "path", "token");
	struct kn *ca = kn_map(kn_map(srcs, NULL), "configMap");
	kn_str(ca, "name", "kube-root-ca.crt");
	struct kn *item = kn_map(kn_list(ca, "items"), NULL);
	kn_str(item, "key", "ca.crt");
	kn_str(item, "path", "ca.crt");
	struct kn *cfg = kn_map(kn_map(srcs, NULL), "configMap");
	kn_strf(cfg, "name", "%s-kubeconfig", p->name);
	item = kn_map(kn_list(cfg, "items"), NULL);
	kn_str(item, "key", "config");
	kn_str(item, "path", "config");
	volume_mount(mounts, "credentials", CREDENTIALS_DIR, true, NULL);
	volume_mount(mounts, "credentials", c->sp->mounts[c->sp->kubeconfig_mount].target, true,
		     "config");
}

/* The spec's binds but the kubeconfig (its own volume): the policy's mounts, in order. */
static void policy_mounts(struct k8s_ctx *c, struct kn *vols, struct kn *mounts)
{
	for (size_t j = 0, i = 0; j < c->sp->n_mounts; j++) {
		const struct ar_spec_mount *m = &c->sp->mounts[j];
		if (!ar_spec_policy_bind(c->sp, j))
			continue;
		char name[32];
		snprintf(name, sizeof(name), "mount-%zu", i);
		struct kn *v = kn_map(vols, NULL);
		kn_note(kn_str(v, "name", name),
			"mounts[%zu] %s -> %s: a node's path is no pod's business (hostPath is "
			"drift); put the data in the claim %s-%s",
			i, m->source, m->target, c->p->name, name);
		struct kn *pvc = kn_map(v, "persistentVolumeClaim");
		kn_strf(pvc, "claimName", "%s-%s", c->p->name, name);
		if (m->readonly)
			kn_bool(pvc, "readOnly", true);
		volume_mount(mounts, name, m->target, m->readonly, NULL);
		i++;
	}
}

/* Secrets: the proxy's CA bundle (the roots it trusts and the CA it made) in an
 * emptyDir the agent reads at the CA variables' directory, fetched from the proxy by an
 * init container before the agent starts (docs/secrets.md). */
static void ca_init_container(struct k8s_ctx *c, struct kn *spec)
{
	struct kn *ctr = kn_map(kn_list(spec, "initContainers"), NULL);
	kn_note(kn_str(ctr, "name", "ca"),
		"secrets: the proxy's CA bundle, which the agent trusts (the CA variables)");
	kn_str(ctr, "image", K8S_BUSYBOX_IMAGE);
	struct kn *cmd = kn_list(ctr, "command");
	kn_str(cmd, NULL, "sh");
	kn_str(cmd, NULL, "-c");
	kn_strf(cmd, NULL,
		"until wget -q -T 5 -O /ca/ca-bundle.pem.tmp http://%s:%d/agentrun/ca-bundle.pem; "
		"do sleep 1; done; mv /ca/ca-bundle.pem.tmp /ca/ca-bundle.pem",
		c->p->proxy_name, c->p->proxy.port);
	struct kn *res = kn_map(ctr, "resources");
	static const char *const kinds[] = {"limits", "requests"};
	for (size_t i = 0; i < AR_ARRAY_SIZE(kinds); i++) {
		struct kn *m = kn_map(res, kinds[i]);
		kn_str(m, "cpu", "100m");
		kn_str(m, "memory", "32Mi");
	}
	k8s_container_security(ctr, c->p);
	volume_mount(kn_list(ctr, "volumeMounts"), "ca", "/ca", false, NULL);
}

static void ca_volume(struct kn *vols, struct kn *mounts)
{
	struct kn *v = kn_map(vols, NULL);
	kn_str(v, "name", "ca");
	struct kn *ed = kn_map(v, "emptyDir");
	kn_str(ed, "medium", "Memory");
	kn_str(ed, "sizeLimit", "4Mi");
	volume_mount(mounts, "ca", AR_RENDER_AGENT_CA_DIR, true, NULL);
}

static void agent_container(struct k8s_ctx *c, struct kn *spec)
{
	if (c->sp->ca_bundle_mount >= 0)
		ca_init_container(c, spec);
	struct kn *ctr = kn_map(kn_list(spec, "containers"), NULL);
	kn_str(ctr, "name", AR_K8S_AGENT_CONTAINER);
	kn_note(kn_str(ctr, "image", c->image), "image (or --image)");
	if (c->o->n_cmd > 0) {
		struct kn *args = kn_list(ctr, "args");
		for (size_t i = 0; i < c->o->n_cmd; i++)
			kn_str(args, NULL, c->o->cmd[i]);
	}
	kn_str(ctr, "imagePullPolicy", "IfNotPresent");
	agent_env(c, ctr);
	agent_resources(c, ctr);
	k8s_container_security(ctr, c->p);
	struct kn *mounts = kn_list(ctr, "volumeMounts");
	struct kn *vols = kn_list(spec, "volumes");
	tmpfs_volumes(c, vols, mounts);
	if (c->sp->kubeconfig_mount >= 0)
		credential_volume(c, vols, mounts);
	policy_mounts(c, vols, mounts);
	if (c->sp->ca_bundle_mount >= 0)
		ca_volume(vols, mounts);
}

static void agent_job(struct k8s_ctx *c)
{
	struct kn *o = k8s_object(c, "batch/v1", "Job", c->p->agent_name, "agent",
				  "user, limits, tmpfs, env, mounts, kubeconfig, seccomp, network");
	if (c->p->rootfs != NULL)
		kn_note(o, "rootfs %s: the image is the pod's root filesystem", c->p->rootfs);
	struct kn *spec = kn_map(o, "spec");
	kn_int(spec, "backoffLimit", 0);
	kn_int(spec, "ttlSecondsAfterFinished", JOB_TTL_SECONDS);
	struct kn *tmpl = kn_map(spec, "template");
	struct kn *labels = kn_map(kn_map(tmpl, "metadata"), "labels");
	k8s_selector_labels(labels, c->p, "agent");
	struct kn *ps = kn_map(tmpl, "spec");
	kn_str(ps, "restartPolicy", "Never");
	kn_str(ps, "serviceAccountName", c->p->agent_name);
	kn_note(kn_bool(ps, "automountServiceAccountToken", false),
		"no API credential but the projected one below");
	kn_bool(ps, "enableServiceLinks", false);
	kn_note(kn_bool(ps, "hostNetwork", false), "a pod's own namespaces, as `run` makes them");
	kn_bool(ps, "hostPID", false);
	kn_bool(ps, "hostIPC", false);
	if (c->k->runtime_class != NULL)
		kn_note(kn_str(ps, "runtimeClassName", c->k->runtime_class),
			"--runtime-class: a RuntimeClass of that name must exist (gvisor, kata)");
	pod_security(ps, c->sp);
	agent_container(c, ps);
}

static const char header[] =
    "# What Kubernetes cannot express (docs/k8s.md):\n"
    "# - limits.pids: no per-pod field; the kubelet's podPidsLimit is a node setting.\n"
    "# - NetworkPolicy does nothing where the CNI does not implement it (check yours).\n"
    "# - NetworkPolicy matches pod and endpoint addresses after DNAT, not Service\n"
    "#   ClusterIPs: the API server is reached at its endpoint (control plane) address,\n"
    "#   which the proxy's private-range `except` refuses unless proxy.allow_private\n"
    "#   lists it.\n"
    "# - The allow-list by name is enforced by the proxy; NetworkPolicy knows only\n"
    "#   addresses (use --cilium for a second wall by name).\n";

static int check_dns_label(const char *what, const char *s, ar_error_t *err)
{
	size_t n = strlen(s);
	bool ok = n > 0 && n <= 63 && s[0] != '-' && s[n - 1] != '-';
	for (size_t i = 0; ok && i < n; i++)
		ok = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-';
	if (!ok)
		return ar_error_make(err, 0,
				     "%s `%s`: not a DNS label (lowercase letters, digits, `-`, "
				     "at most 63)",
				     what, s);
	return 0;
}

static int k8s_setup(struct k8s_ctx *c, ar_error_t *err)
{
	c->image = c->o->image != NULL ? c->o->image : c->p->image;
	if (c->image == NULL || c->image[0] == '\0')
		return ar_error_make(err, 0,
				     "%s: `image` is not set: the Job needs an agent image; set "
				     "`image` in the policy or pass --image",
				     c->p->origin);
	c->proxy_image =
	    c->o->proxy_image != NULL ? c->o->proxy_image : "agentrun:" AGENTRUN_VERSION;
	c->ns = c->k->namespace != NULL ? c->k->namespace : c->p->name;
	if (check_dns_label("--namespace", c->ns, err) < 0)
		return -1;
	if (c->k->runtime_class != NULL &&
	    check_dns_label("--runtime-class", c->k->runtime_class, err) < 0)
		return -1;
	return 0;
}

int ar_render_k8s(const struct ar_spec *sp, const struct ar_render_options *o,
		  const struct ar_k8s_options *k, struct ar_buf *out, ar_error_t *err)
{
	const struct ar_policy *p = sp->p;
	struct k8s_ctx c = {.p = p, .sp = sp, .o = o, .k = k};
	if (k8s_setup(&c, err) < 0)
		return -1;
	if (!k->no_namespace)
		namespace_object(&c);
	service_account(&c);
	if (p->kubeconfig != NULL)
		kubeconfig_configmap(&c);
	agent_job(&c);
	if (p->network == AR_NETWORK_PROXY)
		k8s_proxy_objects(&c);
	k8s_network_policies(&c);
	if (k->cilium && p->network == AR_NETWORK_PROXY)
		k8s_cilium_policy(&c);
	if (k->json) {
		kn_print_json_list(c.objs, c.n_objs, out);
	} else {
		ar_buf_printf(out, "# agentrun render --format k8s: policy %s (%s)\n", p->name,
			      p->origin);
		ar_buf_puts(out, header);
		for (size_t i = 0; i < c.n_objs; i++)
			kn_print_yaml(c.objs[i], out);
	}
	for (size_t i = 0; i < c.n_objs; i++)
		kn_free(c.objs[i]);
	free(c.objs);
	return 0;
}

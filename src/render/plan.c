/* The docker plan: the agent spec as an ordered list of docker argv vectors (DESIGN §8):
 * the agent container is the spec's, the proxy container and the networks the policy's
 * proxy settings and names.
 * Internal network, egress network, the proxy container, `network connect`, the agent
 * container; then the teardown and audit steps the sh script uses. Every printer
 * reads this one list, so text, JSON and the script cannot disagree. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/render.h"
#include "agentrun/spec.h"
#include "agentrun/util.h"

#define PROXY_MEMORY "128m"
#define PROXY_PIDS   "64"
#define PROXY_USER   "65534:65534"

static const struct {
	const char *name;
	enum ar_render_format format;
} formats[] = {
    {"text", AR_RENDER_TEXT},
    {"json", AR_RENDER_JSON},
    {"sh", AR_RENDER_SH},
    {"oci", AR_RENDER_OCI},
};

/* The proxy's flag for each SNI mode (agentrun proxy --sni MODE); off is the proxy's
 * default and is not spelled out. */

int ar_render_format_parse(const char *s, enum ar_render_format *out)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(formats); i++) {
		if (strcmp(s, formats[i].name) == 0) {
			*out = formats[i].format;
			return 0;
		}
	}
	return -1;
}

static struct ar_render_step *add_step(struct ar_render_plan *plan, enum ar_render_phase phase,
				       const char *label)
{
	plan->steps = ar_xrealloc(plan->steps, (plan->n_steps + 1) * sizeof(*plan->steps));
	struct ar_render_step *s = &plan->steps[plan->n_steps++];
	*s = (struct ar_render_step){.phase = phase, .label = label, .nowrap_from = SIZE_MAX};
	s->argv = ar_xcalloc(1, sizeof(char *));
	return s;
}

static void arg(struct ar_render_step *s, const char *a)
{
	s->argv = ar_xrealloc(s->argv, (s->argc + 2) * sizeof(char *));
	s->argv[s->argc++] = ar_xstrdup(a);
	s->argv[s->argc] = NULL;
}

static void argf(struct ar_render_step *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void argf(struct ar_render_step *s, const char *fmt, ...)
{
	va_list ap;
	char *a = NULL;
	va_start(ap, fmt);
	int n = vasprintf(&a, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort();
	arg(s, a);
	free(a);
}

static void args(struct ar_render_step *s, const char *first, ...)
{
	va_list ap;
	va_start(ap, first);
	for (const char *a = first; a != NULL; a = va_arg(ap, const char *))
		arg(s, a);
	va_end(ap);
}

static void finish_step(struct ar_render_step *s)
{
	if (s->nowrap_from > s->argc)
		s->nowrap_from = s->argc;
}

/* Bytes in the largest binary unit that divides them exactly, in docker's spelling:
 * 268435456 -> "256m". */
static void format_bytes(int64_t v, char *out, size_t size)
{
	static const struct {
		char suffix;
		int shift;
	} units[] = {{'t', 40}, {'g', 30}, {'m', 20}, {'k', 10}};
	for (size_t i = 0; i < AR_ARRAY_SIZE(units); i++) {
		int64_t unit = INT64_C(1) << units[i].shift;
		if (v >= unit && v % unit == 0) {
			snprintf(out, size, "%" PRId64 "%c", v / unit, units[i].suffix);
			return;
		}
	}
	snprintf(out, size, "%" PRId64, v);
}

/* Millicpus as docker's --cpus decimal: 1000 -> "1", 500 -> "0.5", 1250 -> "1.25". */
static void format_cpus(int64_t milli, char *out, size_t size)
{
	if (milli % 1000 == 0) {
		snprintf(out, size, "%" PRId64, milli / 1000);
		return;
	}
	snprintf(out, size, "%" PRId64 ".%03" PRId64, milli / 1000, milli % 1000);
	size_t n = strlen(out);
	while (n > 0 && out[n - 1] == '0')
		out[--n] = '\0';
}

/* The hardening both containers share, in the order DESIGN §8 lists it. */
static void hardening(struct ar_render_step *s, const char *pids, const char *memory)
{
	args(s, "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
	     "--cgroupns", "private", "--pids-limit", pids, "--memory", memory, NULL);
	/* memory-swap equal to memory: no swap, like memory.swap.max = 0 in `run` */
	args(s, "--memory-swap", memory, NULL);
}

/* Secrets (docs/secrets.md): the values reach the proxy container only: an env:
 * source by name (`-e VAR`: docker takes the value from the environment `docker run`
 * runs in, never from its argv), a file: source as a read-only bind; the volume the
 * proxy writes its CA bundle into, which the agent mounts read-only. */
static void proxy_secret_mounts(const struct ar_policy *p, struct ar_render_step *s)
{
	if (p->n_secrets == 0)
		return;
	arg(s, "-v");
	argf(s, "%s-ca:%s", p->name, AR_RENDER_PROXY_CA_DIR);
	for (size_t i = 0; i < p->n_secrets; i++) {
		const struct ar_secret_spec *x = &p->secrets[i];
		if (strncmp(x->from, "env:", 4) == 0) {
			args(s, "-e", x->from + 4, NULL);
			continue;
		}
		arg(s, "-v");
		argf(s, "%s:%s/%s:ro", x->from + 5, AR_RENDER_SECRETS_DIR, x->name);
	}
	if (p->proxy.upstream_ca != NULL) {
		arg(s, "-v");
		argf(s, "%s:%s:ro", p->proxy.upstream_ca, AR_RENDER_UPSTREAM_CA);
	}
}

/* The proxy's flags for them: each secret, its hosts, the agent's placeholder (the
 * spec's, fresh per rendering), and where the CA bundle goes. */
static void proxy_secret_args(const struct ar_spec *sp, struct ar_render_step *s)
{
	const struct ar_policy *p = sp->p;
	for (size_t i = 0; i < p->n_secrets; i++) {
		const struct ar_secret_spec *x = &p->secrets[i];
		arg(s, "--secret");
		if (strncmp(x->from, "env:", 4) == 0)
			argf(s, "%s=%s", x->name, x->from);
		else
			argf(s, "%s=file:%s/%s", x->name, AR_RENDER_SECRETS_DIR, x->name);
		for (size_t k = 0; k < x->n_hosts; k++) {
			arg(s, "--secret-host");
			argf(s, "%s=%s", x->name, x->hosts[k]);
		}
		arg(s, "--secret-placeholder");
		argf(s, "%s=%s", x->name, ar_spec_getenv(sp, x->name));
	}
	if (p->n_secrets > 0 && p->proxy.upstream_ca != NULL)
		args(s, "--upstream-ca", AR_RENDER_UPSTREAM_CA, NULL);
	if (p->n_secrets > 0)
		args(s, "--ca-bundle", AR_RENDER_PROXY_CA_DIR "/ca-bundle.pem", NULL);
}

static void proxy_step(const struct ar_spec *sp, const char *proxy_image,
		       struct ar_render_plan *plan)
{
	const struct ar_policy *p = sp->p;
	struct ar_render_step *s = add_step(plan, AR_RENDER_UP, "proxy");
	args(s, "docker", "run", "-d", "--name", p->proxy_name, "--network", p->egress_name, NULL);
	hardening(s, PROXY_PIDS, PROXY_MEMORY);
	args(s, "--user", PROXY_USER, NULL);
	arg(s, "-v");
	argf(s, "%s-audit:%s", p->name, AR_RENDER_AUDIT_DIR);
	args(s, "--tmpfs", "/tmp", NULL);
	proxy_secret_mounts(p, s);
	args(s, proxy_image, "proxy", "--listen", NULL);
	argf(s, "0.0.0.0:%d", p->proxy.port);
	for (size_t i = 0; i < p->n_allowed_hosts; i++)
		args(s, "--allow", p->allowed_hosts[i], NULL);
	for (size_t i = 0; i < p->proxy.n_budgets; i++) {
		arg(s, "--max-bytes-out");
		argf(s, "%s=%" PRId64, p->proxy.budgets[i].host, p->proxy.budgets[i].max_bytes_out);
	}
	/* allow-listed hosts that are containers (a kind control plane) live in private
	 * ranges the proxy refuses unless the policy names them */
	for (size_t i = 0; i < p->proxy.n_allow_private; i++)
		args(s, "--allow-private", p->proxy.allow_private[i], NULL);
	/* always spelled out: a proxy image of another version may default otherwise */
	args(s, "--sni", ar_policy_sni_word(p->proxy.sni), NULL);
	proxy_secret_args(sp, s);
	args(s, "--audit", AR_RENDER_AUDIT_FILE, NULL);
	finish_step(s);
}

/* The spec's container environment: the proxy variables, the policy's env (sorted by
 * key by the policy reader), ... KUBECONFIG goes with its mount (agent_mounts). */
static void agent_env(const struct ar_spec *sp, struct ar_render_step *s)
{
	for (char **e = sp->container_env; *e != NULL; e++) {
		if (sp->kubeconfig_mount >= 0 && strncmp(*e, "KUBECONFIG=", 11) == 0)
			continue;
		args(s, "-e", *e, NULL);
	}
}

/* The kubeconfig first, with its variable, then the binds; tmpfs went before (--tmpfs). */
static void agent_mounts(const struct ar_spec *sp, struct ar_render_step *s)
{
	if (sp->kubeconfig_mount >= 0) {
		const struct ar_spec_mount *k = &sp->mounts[sp->kubeconfig_mount];
		arg(s, "-v");
		argf(s, "%s:%s:ro", k->source, k->target);
		arg(s, "-e");
		argf(s, "KUBECONFIG=%s", ar_spec_getenv(sp, "KUBECONFIG"));
	}
	for (size_t i = 0; i < sp->n_mounts; i++) {
		const struct ar_spec_mount *m = &sp->mounts[i];
		if (!ar_spec_policy_bind(sp, i))
			continue;
		arg(s, "-v");
		argf(s, "%s:%s:%s", m->source, m->target, m->readonly ? "ro" : "rw");
	}
	/* secrets: the CA bundle is the proxy's, in the volume it writes */
	if (sp->ca_bundle_mount >= 0) {
		arg(s, "-v");
		argf(s, "%s-ca:%s:ro", sp->p->name, AR_RENDER_AGENT_CA_DIR);
	}
}

static void agent_seccomp(const struct ar_spec *sp, struct ar_render_step *s)
{
	/* "default": docker's own default profile applies (see docs/render.md) */
	if (strcmp(sp->seccomp, "default") == 0)
		return;
	arg(s, "--security-opt");
	argf(s, "seccomp=%s", sp->seccomp);
}

/* The agent container: everything it gets is the spec's. */
static void agent_step(const struct ar_spec *sp, const char *image,
		       const struct ar_render_options *o, struct ar_render_plan *plan)
{
	const struct ar_policy *p = sp->p;
	char memory[32], cpus[32];
	format_bytes(sp->limits.memory, memory, sizeof(memory));
	format_cpus(sp->limits.cpus_milli, cpus, sizeof(cpus));

	struct ar_render_step *s = add_step(plan, AR_RENDER_RUN, "agent");
	args(s, "docker", "run", "--rm", "-i", "--name", p->agent_name, "--network",
	     sp->net.mode == AR_NETWORK_PROXY ? p->net_name : "none", NULL);
	args(s, "--read-only", NULL);
	for (size_t i = 0; i < sp->n_mounts; i++) {
		if (sp->mounts[i].kind != AR_SPEC_MNT_TMPFS)
			continue;
		arg(s, "--tmpfs");
		argf(s, "%s:rw,nosuid,nodev", sp->mounts[i].target);
	}
	/* --cgroupns private: docker's default is host on cgroup v1 and hybrid hosts */
	args(s, "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--cgroupns", "private",
	     NULL);
	agent_seccomp(sp, s);
	arg(s, "--pids-limit");
	argf(s, "%" PRId64, sp->limits.pids);
	args(s, "--memory", memory, "--memory-swap", memory, "--cpus", cpus, NULL);
	/* always UID:GID: a bare UID makes docker use gid 0 when the image has no passwd entry */
	arg(s, "--user");
	argf(s, "%u:%u", (unsigned)sp->uid, (unsigned)sp->gid);
	agent_env(sp, s);
	agent_mounts(sp, s);
	s->nowrap_from = s->argc;
	arg(s, image);
	for (size_t i = 0; i < o->n_cmd; i++)
		arg(s, o->cmd[i]);
	finish_step(s);
}

static void teardown_steps(const struct ar_policy *p, struct ar_render_plan *plan)
{
	struct ar_render_step *s = add_step(plan, AR_RENDER_DOWN, "remove agent");
	args(s, "docker", "rm", "-f", p->agent_name, NULL);
	finish_step(s);
	if (p->network != AR_NETWORK_PROXY)
		return;
	s = add_step(plan, AR_RENDER_DOWN, "remove proxy");
	args(s, "docker", "rm", "-f", p->proxy_name, NULL);
	finish_step(s);
	s = add_step(plan, AR_RENDER_DOWN, "remove internal network");
	args(s, "docker", "network", "rm", p->net_name, NULL);
	finish_step(s);
	s = add_step(plan, AR_RENDER_DOWN, "remove egress network");
	args(s, "docker", "network", "rm", p->egress_name, NULL);
	finish_step(s);
	if (p->n_secrets > 0) { /* the proxy's CA bundle: made again at each start */
		s = add_step(plan, AR_RENDER_DOWN, "remove CA volume");
		arg(s, "docker");
		args(s, "volume", "rm", NULL);
		argf(s, "%s-ca", p->name);
		finish_step(s);
	}

	s = add_step(plan, AR_RENDER_AUDIT, "audit");
	args(s, "docker", "exec", p->proxy_name, "agentrun", "audit", AR_RENDER_AUDIT_FILE, NULL);
	finish_step(s);
}

static void network_steps(const struct ar_policy *p, struct ar_render_plan *plan)
{
	/* --internal alone leaves the host an address on the bridge, and through it the
	 * host's services stay reachable (moby/libnetwork#1151); inhibit_ipv4 takes it away,
	 * while containers on the network still reach each other (the proxy) */
	struct ar_render_step *s = add_step(plan, AR_RENDER_UP, "internal network");
	args(s, "docker", "network", "create", "--internal", "-o", AR_DOCKER_INHIBIT_IPV4 "=true",
	     p->net_name, NULL);
	finish_step(s);
	s = add_step(plan, AR_RENDER_UP, "egress network");
	args(s, "docker", "network", "create", p->egress_name, NULL);
	finish_step(s);
}

/* The agent image and the proxy image, each checked against docker's grammar and
 * named by where it came from. */
static int pick_images(const struct ar_policy *p, const struct ar_render_options *o,
		       const char **image, const char **proxy_image, ar_error_t *err)
{
	*image = o->image != NULL ? o->image : p->image;
	*proxy_image = o->proxy_image != NULL ? o->proxy_image : AR_RENDER_DEFAULT_IMAGE;
	if (*image == NULL || (*image)[0] == '\0')
		return ar_error_make(
		    err, 0,
		    "%s: `image` is not set: the docker plan needs an agent image; "
		    "set `image` in the policy or pass --image",
		    p->origin);
	ar_autofree char *from_policy = ar_xasprintf("%s: image", p->origin);
	if (ar_render_image_check(*image, o->image ? "--image" : from_policy, err) < 0)
		return -1;
	if (ar_render_image_check(*proxy_image, "--proxy-image", err) < 0)
		return -1;
	return 0;
}

int ar_render_plan_build(const struct ar_spec *sp, const struct ar_render_options *o,
			 struct ar_render_plan **out, ar_error_t *err)
{
	const struct ar_policy *p = sp->p;
	const char *image, *proxy_image;
	if (pick_images(p, o, &image, &proxy_image, err) < 0)
		return -1;

	struct ar_render_plan *plan = ar_xcalloc(1, sizeof(*plan));
	if (p->network == AR_NETWORK_PROXY) {
		network_steps(p, plan);
		proxy_step(sp, proxy_image, plan);
		struct ar_render_step *s = add_step(plan, AR_RENDER_UP, "connect proxy");
		args(s, "docker", "network", "connect", p->net_name, p->proxy_name, NULL);
		finish_step(s);
		if (p->proxy.transparent)
			plan->note = AR_RENDER_NOTE_CAPTURE;
	}
	agent_step(sp, image, o, plan);
	teardown_steps(p, plan);
	*out = plan;
	return 0;
}

void ar_render_plan_free(struct ar_render_plan *plan)
{
	if (plan == NULL)
		return;
	for (size_t i = 0; i < plan->n_steps; i++)
		ar_strv_free(plan->steps[i].argv);
	free(plan->steps);
	free(plan);
}

void ar_cleanup_render_planp(struct ar_render_plan **plan)
{
	ar_render_plan_free(*plan);
	*plan = NULL;
}

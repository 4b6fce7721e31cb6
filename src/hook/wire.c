/* The hook's network step, in one place: for `network: proxy` the container's netns
 * (/proc/PID/ns/net, checked empty but lo) is joined to a fresh proxy netns by a veth
 * made in place, with a detached confined proxy for the policy (src/net/detached.c);
 * the net state AR_STATE_ROOT/NAME-PID is what poststop, `ps` and `gc` read.
 *
 * The address is fixed, not allocated: the config was rendered before any container
 * existed, so its proxy URL names AR_SPEC_PROXY_ADDR, the first /30 of the default
 * range. Every hook-wired container has that same /30, and no two clash: both ends of
 * each veth live in namespaces of their own (the container's, its private proxy
 * netns), and the host netns gains no address or route. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "agentrun/hook.h"
#include <cjson/cJSON.h>

#include "agentrun/net.h"
#include "agentrun/secrets.h"
#include "agentrun/spec.h"
#include "agentrun/util.h"

void ar_hook_plan(int port, struct ar_net_plan *out)
{
	struct in_addr a;
	inet_pton(AF_INET, AR_SPEC_PROXY_ADDR, &a);
	struct ar_net_range r = {.base = ntohl(a.s_addr) & ~3u, .prefix = 30};
	ar_net_plan_at(&r, 0, port, out);
}

void ar_hook_state_name(const char *policy_name, pid_t pid, char *buf, size_t size)
{
	snprintf(buf, size, "%s-%d", policy_name, (int)pid);
}

static void free_json(cJSON **j)
{
	cJSON_Delete(*j);
}

/* Secrets (docs/secrets.md): the placeholders are the ones render put into the bundle's
 * config.json; the proxy reads the values, and its CA goes into the spec's CA bundle
 * file, which the bundle holds (a source relative to it). With a kubeconfig its token is
 * one more secret, with a placeholder of the hook's, and the bundle's own kubeconfig
 * file (*kubeconfig) is written once the CA exists. */
static int hook_secrets(const struct ar_spec *sp, const struct ar_oci_state *s,
			struct ar_secrets **out, char **ca_bundle, struct ar_kubeconfig *k,
			char **kubeconfig, ar_error_t *err)
{
	const struct ar_policy *p = sp->p;
	ar_autofree char *path = ar_xasprintf("%s/config.json", s->bundle);
	ar_autofree char *text = NULL;
	size_t len = 0;
	if (sp->ca_bundle_mount < 0)
		return 0;
	if (ar_read_file(path, 16u << 20, &text, &len, err) == -1)
		return ar_error_wrap(err, "secrets");
	__attribute__((cleanup(free_json))) cJSON *cfg = cJSON_ParseWithLength(text, len);
	const cJSON *env = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(cfg, "process"), "env");
	size_t n = 0;
	ar_autostrv char **v = ar_xcalloc((size_t)cJSON_GetArraySize(env) + 1, sizeof(char *));
	const cJSON *e;
	cJSON_ArrayForEach(e, env) if (cJSON_IsString(e)) v[n++] = ar_xstrdup(e->valuestring);
	if (ar_secrets_new(p, out, err) == -1 || ar_secrets_adopt(*out, v, path, err) == -1 ||
	    ar_secrets_kubeconfig(out, p, k, err) == -1 ||
	    ar_secrets_check_sources(*out, err) == -1)
		return -1;
	*ca_bundle = ar_xasprintf("%s/%s", s->bundle, sp->mounts[sp->ca_bundle_mount].source);
	if (ar_spec_kubeconfig_secret(p) && sp->kubeconfig_mount >= 0)
		*kubeconfig =
		    ar_xasprintf("%s/%s", s->bundle, sp->mounts[sp->kubeconfig_mount].source);
	return 0;
}

int hook_wire_network(const struct ar_spec *sp, const struct ar_oci_state *s,
		      const char *policy_path, ar_error_t *err)
{
	const struct ar_policy *p = sp->p;
	ar_autosecrets struct ar_secrets *secrets = NULL;
	ar_autofree char *ca_bundle = NULL, *kubeconfig = NULL;
	__attribute__((cleanup(ar_kubeconfig_free))) struct ar_kubeconfig k = {0};
	char path[64], name[AR_POLICY_NAME_MAX + 16];
	struct ar_net_plan plan;
	struct ar_net_state st;

	if (sp->net.mode == AR_NETWORK_NONE)
		return 0; /* the runtime's fresh netns has only lo: that is network none */
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)s->pid);
	ar_autoclose int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return ar_error_make(err, errno, "network: open `%s`", path);
	if (hook_secrets(sp, s, &secrets, &ca_bundle, &k, &kubeconfig, err) == -1)
		return -1;
	ar_hook_plan(p->proxy.port, &plan);
	ar_hook_state_name(p->name, s->pid, name, sizeof(name));
	struct ar_net_detached_opts o = {.p = p,
					 .name = name,
					 .policy_path = policy_path,
					 .owner = s->pid,
					 .pid = s->pid,
					 .plan = &plan,
					 .secrets = secrets,
					 .ca_bundle = ca_bundle,
					 .kubeconfig = kubeconfig,
					 .kube = &k};
	return ar_net_wire_detached(&o, fd, &st, err);
}

void hook_unwire_network(const char *policy_name, pid_t pid)
{
	char name[AR_POLICY_NAME_MAX + 16];
	struct ar_net_state st;
	ar_auto_error ar_error_t ignored = NULL;

	ar_hook_state_name(policy_name, pid, name, sizeof(name));
	/* only the hook's own state: a `run` sandbox named NAME-PID after a recycled pid has
	 * an owner (agentrun) other than its sandbox pid, and an allocated /30 */
	if (ar_net_state_read(name, &st, &ignored) == 0 && st.owner == pid && st.pid == pid &&
	    st.net_index == -1)
		ar_net_unwire(&st);
}

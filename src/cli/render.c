/* agentrun render: print a policy as docker commands, JSON argv lists, a runnable sh
 * script or an OCI config.json (DESIGN §8). The work is in src/render/. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentrun/cli.h"
#include "agentrun/k8s.h"
#include "agentrun/policy.h"
#include "agentrun/proxy.h"
#include "agentrun/render.h"
#include "agentrun/spec.h"
#include "agentrun/util.h"

#define CMD "render"

struct render_args {
	const char *policy;
	enum ar_render_format format;
	struct ar_render_options opts;
	struct ar_k8s_options k8s;
	const char *bundle; /* --bundle DIR: write DIR/config.json */
	const char *netns;  /* --netns as given */
};

/* Where `agentrun net up --name N` bind-mounts a prepared netns. */
#define NETNS_DIR "/run/agentrun/netns"

static int set_format(void *ctx, const struct ar_opt *opt, const char *v, ar_error_t *err)
{
	struct render_args *a = ctx;
	if (ar_render_format_parse(v, &a->format) < 0 &&
	    ar_render_k8s_format_parse(v, &a->format) < 0)
		return ar_error_make(err, 0,
				     "--format: unknown format `%s` (text, json, sh, oci, k8s, "
				     "k8s-json)",
				     v);
	return 0;
}

#define ARG(field) offsetof(struct render_args, field)

static const struct ar_opt opts[] = {
    {"--policy", 'p', "FILE", "the policy (JSON) or a profile's name, required", ar_opt_str,
     ARG(policy)},
    {"--format", 'f', "FORMAT",
     "text (default): one shell-quoted command per line\n"
     "json: the same plan as argv lists\n"
     "sh:   a POSIX sh script with up, run, down, audit\n"
     "oci:  a runtime-spec config.json (needs CMD)\n"
     "k8s:  Kubernetes objects, a YAML stream\n"
     "k8s-json: the same objects as a v1/List",
     set_format, 0},
    {"--image", 'i', "IMAGE", "the agent image (default: the policy's `image`)", ar_opt_str,
     ARG(opts.image)},
    {"--proxy-image", 0, "IMAGE",
     "the image with agentrun as its entrypoint\n(default: agentrun:" AGENTRUN_VERSION ")",
     ar_opt_str, ARG(opts.proxy_image)},
    {"--namespace", 0, "NS", "k8s: the namespace (default: the policy name)", ar_opt_str,
     ARG(k8s.namespace)},
    {"--no-namespace", 0, NULL, "k8s: the namespace exists; do not emit it", ar_opt_true,
     ARG(k8s.no_namespace)},
    {"--runtime-class", 0, "NAME", "k8s: the agent pod's runtimeClassName (gvisor, kata)",
     ar_opt_str, ARG(k8s.runtime_class)},
    {"--cilium", 0, NULL, "k8s: also a CiliumNetworkPolicy by name", ar_opt_true, ARG(k8s.cilium)},
    {"--rootfs", 0, "DIR",
     "oci: root.path, an existing directory (default: the\npolicy's rootfs, else rootfs in "
     "the bundle)",
     ar_opt_str, ARG(opts.rootfs)},
    {"--bundle", 0, "DIR",
     "oci: write DIR/config.json (atomically) instead of\nprinting it; DIR is created if "
     "missing",
     ar_opt_str, ARG(bundle)},
    {"--netns", 0, "NAME|PATH",
     "oci: join a prepared netns (" NETNS_DIR "/NAME)\ninstead of a fresh one wired by the "
     "hook",
     ar_opt_str, ARG(netns)},
    {NULL},
};

const struct ar_cli_cmd ar_cli_render = {
    .name = "render",
    .fn = ar_cmd_render,
    .summary = "print the policy as docker commands, a script, OCI config or k8s objects",
    .synopsis = "render --policy FILE [--format text|json|sh|oci|k8s|k8s-json]\n"
		"                [--image IMAGE] [--proxy-image IMAGE] [-- CMD [ARG...]]",
    .about = "Print the policy as the docker commands that build the same sandbox: an internal\n"
	     "network, an egress network, the egress proxy container (`agentrun proxy` with the\n"
	     "allow-list), and the hardened agent container running CMD (the image's default\n"
	     "command when CMD is omitted); or as an OCI bundle's config.json, or Kubernetes\n"
	     "objects. See docs/render.md.",
    .opts = opts,
    .takes_cmd = true,
    .exit_status = "0 ok, 2 bad input or usage.",
    .usage_exit = AR_EXIT_USAGE,
};

/* The flags that apply to one format only, checked once all are read. */
static int check_args(struct render_args *a)
{
	if (a->policy == NULL)
		return ar_cli_usage_error(CMD, -1, "--policy FILE is required");
	/* an OCI bundle's image is its rootfs: say so rather than ignore the flag */
	if (a->format == AR_RENDER_OCI && (a->opts.image != NULL || a->opts.proxy_image != NULL))
		return ar_cli_usage_error(CMD, -1,
					  "%s does not apply to --format oci (the bundle's rootfs "
					  "is the image)",
					  a->opts.image != NULL ? "--image" : "--proxy-image");
	if (a->format != AR_RENDER_K8S && a->format != AR_RENDER_K8S_JSON &&
	    (a->k8s.namespace || a->k8s.no_namespace || a->k8s.runtime_class || a->k8s.cilium))
		return ar_cli_usage_error(CMD, -1,
					  "--namespace, --no-namespace, --runtime-class and "
					  "--cilium apply to --format k8s and k8s-json only");
	a->k8s.json = a->format == AR_RENDER_K8S_JSON;
	if (a->format != AR_RENDER_OCI && (a->opts.rootfs || a->bundle || a->netns))
		return ar_cli_usage_error(CMD, -1, "%s needs --format oci",
					  a->opts.rootfs ? "--rootfs"
					  : a->bundle	 ? "--bundle"
							 : "--netns");
	/* an absolute root the runtime would fail on later, far from the cause (a relative
	 * one is the bundle's, which may be filled after rendering) */
	struct stat st;
	if (a->opts.rootfs == NULL || a->opts.rootfs[0] != '/')
		return 0;
	if (stat(a->opts.rootfs, &st) == -1)
		return ar_cli_usage_error(CMD, -1, "--rootfs `%s`: %s", a->opts.rootfs,
					  errno == ENOENT ? "no such directory" : strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return ar_cli_usage_error(CMD, -1, "--rootfs `%s`: not a directory",
					  a->opts.rootfs);
	return 0;
}

/* --netns NAME (a name `agentrun net up` made) or an absolute PATH. */
static int netns_path(const char *arg, char **out, ar_error_t *err)
{
	if (arg[0] == '/') {
		*out = ar_xstrdup(arg);
		return 0;
	}
	if (arg[0] == '\0' ||
	    strspn(arg, "abcdefghijklmnopqrstuvwxyz0123456789-_.") != strlen(arg) || arg[0] == '.')
		return ar_error_make(err, 0,
				     "--netns `%s`: not a netns name ([a-z0-9-_.]) or an "
				     "absolute path",
				     arg);
	*out = ar_xasprintf("%s/%s", NETNS_DIR, arg);
	return 0;
}

/* Secrets: DIR/agentrun-ca-bundle.pem, the host's roots, which the hook completes with
 * the sandbox CA before the container runs (docs/secrets.md). */
static int write_ca_bundle(const char *dir, ar_error_t *err)
{
	const char *roots = ar_proxy_tls_host_bundle("/");
	ar_autofree char *data = NULL;
	size_t len = 0;
	if (roots == NULL)
		return ar_error_make(err, 0, "--bundle: secrets: no CA bundle on this host");
	if (ar_read_file(roots, 16u << 20, &data, &len, err) < 0)
		return ar_error_wrap(err, "--bundle: secrets");
	ar_autofree char *path = ar_xasprintf("%s/" AR_SPEC_CA_BUNDLE_FILE, dir);
	if (ar_write_file(path, data, len, err) < 0 || chmod(path, 0644) == -1)
		return ar_error_wrap(err, "--bundle");
	return 0;
}

/* DIR/agentrun-kubeconfig: bound at the kubeconfig target, written by the hook before
 * the container runs (a placeholder token, the sandbox CA); never the policy's own. */
static int write_kubeconfig_stub(const char *dir, ar_error_t *err)
{
	static const char stub[] = "# agentrun hook create-runtime writes this container's "
				   "kubeconfig here (docs/secrets.md)\n";
	ar_autofree char *path = ar_xasprintf("%s/" AR_SPEC_KUBECONFIG_FILE, dir);
	if (ar_write_file(path, stub, sizeof(stub) - 1, err) < 0 || chmod(path, 0644) == -1)
		return ar_error_wrap(err, "--bundle");
	return 0;
}

/* Write DIR/config.json: DIR made if missing (not its parents), the file replaced by
 * rename, so a failure leaves the old one or none. */
static int write_bundle(const struct ar_policy *p, const char *dir, const struct ar_buf *out,
			ar_error_t *err)
{
	if (mkdir(dir, 0755) == -1 && errno != EEXIST)
		return ar_error_make(err, errno, "--bundle: create `%s`", dir);
	ar_autofree char *path = ar_xasprintf("%s/config.json", dir);
	if (ar_write_file(path, out->data, out->len, err) < 0)
		return ar_error_wrap(err, "--bundle");
	bool kube = ar_spec_kubeconfig_secret(p);
	if ((p->n_secrets > 0 || kube) && write_ca_bundle(dir, err) < 0)
		return -1;
	return kube ? write_kubeconfig_stub(dir, err) : 0;
}

static int render_oci(struct render_args *a, const struct ar_policy *p, struct ar_buf *out,
		      ar_error_t *err)
{
	ar_autospec struct ar_spec *sp = NULL;
	ar_autofree char *owned = NULL, *netns = NULL, *self = NULL, *policy = NULL;
	const char *text, *origin;
	if (ar_spec_build(p, NULL, &sp, err) < 0 ||
	    ar_spec_seccomp_text(sp, &owned, &text, &origin, err) < 0)
		return -1;
	if (a->netns != NULL && netns_path(a->netns, &netns, err) < 0)
		return -1;
	/* the hooks name this binary and the policy by absolute paths: the runtime runs
	 * them from its own working directory */
	self = realpath("/proc/self/exe", NULL);
	policy = p->path ? ar_xstrdup(p->path) : NULL;
	if (self == NULL || policy == NULL)
		return ar_error_make(err, errno, "resolve `%s`",
				     self ? a->policy : "/proc/self/exe");
	a->opts.netns = netns;
	a->opts.hook_path = self;
	a->opts.policy_path = policy;
	return ar_render_oci(sp, &a->opts, text, origin, out, err);
}

static int render(struct render_args *a, const struct ar_policy *p, struct ar_buf *out,
		  ar_error_t *err)
{
	if (a->format == AR_RENDER_OCI)
		return render_oci(a, p, out, err);
	ar_autospec struct ar_spec *sp = NULL;
	if (ar_spec_build_container(p, &sp, err) < 0)
		return -1;
	if (a->format == AR_RENDER_K8S || a->format == AR_RENDER_K8S_JSON)
		return ar_render_k8s(sp, &a->opts, &a->k8s, out, err);
	ar_autoplan struct ar_render_plan *plan = NULL;
	if (ar_render_plan_build(sp, &a->opts, &plan, err) < 0)
		return -1;
	if (a->format == AR_RENDER_JSON)
		ar_render_print_json(plan, out);
	else if (a->format == AR_RENDER_SH)
		ar_render_print_sh(p, plan, out);
	else
		ar_render_print_text(plan, out);
	return 0;
}

int ar_cmd_render(int argc, char **argv)
{
	struct render_args a = {.format = AR_RENDER_TEXT};
	ar_autoopts struct ar_opt_result r = {0};
	int rc;
	if (ar_cli_parse(&ar_cli_render, argc, argv, &a, &r, &rc) != 0)
		return rc;
	if (check_args(&a) < 0)
		return AR_EXIT_USAGE;
	a.opts.cmd = r.cmd;
	a.opts.n_cmd = r.n_cmd;

	ar_auto_error ar_error_t err = NULL;
	ar_autopolicy struct ar_policy *p = NULL;
	if (ar_policy_load(a.policy, &p, &err) < 0) {
		ar_error_print(&err);
		return AR_EXIT_USAGE;
	}
	ar_autobuf struct ar_buf out = {0};
	if (render(&a, p, &out, &err) < 0) {
		ar_error_wrap(&err, CMD);
		ar_error_print(&err);
		return AR_EXIT_USAGE;
	}
	if (a.bundle != NULL) {
		if (write_bundle(p, a.bundle, &out, &err) == 0)
			return AR_EXIT_OK;
		ar_error_wrap(&err, CMD);
		ar_error_print(&err);
		return AR_EXIT_USAGE;
	}
	if (ar_write_all(STDOUT_FILENO, out.data, out.len) < 0) {
		ar_error_make(&err, errno, CMD ": write the output");
		ar_error_print(&err);
		return AR_EXIT_USAGE;
	}
	return AR_EXIT_OK;
}

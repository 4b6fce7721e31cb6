/* agentrun render: print a policy as docker commands, JSON argv lists, a runnable sh
 * script or an OCI config.json (DESIGN §8). The work is in src/render/. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
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

enum {
	OPT_PROXY_IMAGE = 256,
	OPT_NAMESPACE,
	OPT_NO_NAMESPACE,
	OPT_RUNTIME_CLASS,
	OPT_CILIUM,
	OPT_ROOTFS,
	OPT_BUNDLE,
	OPT_NETNS
};

/* Where `agentrun net up --name N` bind-mounts a prepared netns. */
#define NETNS_DIR "/run/agentrun/netns"

static const struct option long_options[] = {
    {"policy", required_argument, NULL, 'p'},
    {"format", required_argument, NULL, 'f'},
    {"image", required_argument, NULL, 'i'},
    {"proxy-image", required_argument, NULL, OPT_PROXY_IMAGE},
    {"namespace", required_argument, NULL, OPT_NAMESPACE},
    {"no-namespace", no_argument, NULL, OPT_NO_NAMESPACE},
    {"runtime-class", required_argument, NULL, OPT_RUNTIME_CLASS},
    {"cilium", no_argument, NULL, OPT_CILIUM},
    {"rootfs", required_argument, NULL, OPT_ROOTFS},
    {"bundle", required_argument, NULL, OPT_BUNDLE},
    {"netns", required_argument, NULL, OPT_NETNS},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void usage(void)
{
	printf("Usage: agentrun render --policy FILE [--format text|json|sh|oci|k8s|k8s-json]\n"
	       "                       [--image IMAGE] [--proxy-image IMAGE] [-- CMD [ARG...]]\n"
	       "       oci only: [--rootfs DIR] [--bundle DIR] [--netns NAME|PATH]\n"
	       "       k8s only: [--namespace NS] [--no-namespace] [--runtime-class NAME]\n"
	       "                 [--cilium]\n\n"
	       "Print the policy as the docker commands that build the same sandbox: an internal\n"
	       "network, an egress network, the egress proxy container (`agentrun proxy` with the\n"
	       "allow-list), and the hardened agent container running CMD (the image's default\n"
	       "command when CMD is omitted).\n\n"
	       "Options:\n"
	       "  -p, --policy FILE        the policy (JSON), required\n"
	       "  -f, --format FORMAT      text (default): one shell-quoted command per line\n"
	       "                           json: the same plan as argv lists\n"
	       "                           sh:   a POSIX sh script with up, run, down, audit\n"
	       "                           oci:  a runtime-spec config.json (needs CMD)\n"
	       "                           k8s:  Kubernetes objects, a YAML stream\n"
	       "                           k8s-json: the same objects as a v1/List\n"
	       "  -i, --image IMAGE        the agent image (default: the policy's `image`)\n"
	       "      --proxy-image IMAGE  the image with agentrun as its entrypoint\n"
	       "                           (default: agentrun:%s)\n"
	       "      --namespace NS       k8s: the namespace (default: the policy name)\n"
	       "      --no-namespace       k8s: the namespace exists; do not emit it\n"
	       "      --runtime-class NAME k8s: the agent pod's runtimeClassName (gvisor, kata)\n"
	       "      --cilium             k8s: also a CiliumNetworkPolicy by name\n"
	       "      --rootfs DIR         oci: root.path (default: the policy's rootfs, else\n"
	       "                           rootfs in the bundle)\n"
	       "      --bundle DIR         oci: write DIR/config.json (atomically) instead of\n"
	       "                           printing it; DIR is created if missing\n"
	       "      --netns NAME|PATH    oci: join a prepared netns (" NETNS_DIR "/NAME)\n"
	       "                           instead of a fresh one wired by the hook\n"
	       "  -h, --help               show this help\n\n"
	       "Exit status: 0 ok, 2 bad input or usage. See docs/render.md.\n",
	       AGENTRUN_VERSION);
}

/* The option as the user wrote it, for messages. */
static const char *option_text(char **argv, int opt_index)
{
	return opt_index > 0 ? argv[opt_index - 1] : "?";
}

/* Returns 0 to go on, 1 when --help was printed, or the usage exit status. */
static int parse_args(int argc, char **argv, struct render_args *a)
{
	int c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:p:f:i:h", long_options, NULL)) != -1) {
		switch (c) {
		case 'p':
			a->policy = optarg;
			break;
		case 'f':
			if (ar_render_format_parse(optarg, &a->format) < 0 &&
			    ar_render_k8s_format_parse(optarg, &a->format) < 0)
				return ar_cli_usage_error(CMD, AR_EXIT_USAGE,
							  "--format: unknown format `%s` (text, "
							  "json, sh, oci, k8s, k8s-json)",
							  optarg);
			break;
		case 'i':
			a->opts.image = optarg;
			break;
		case OPT_PROXY_IMAGE:
			a->opts.proxy_image = optarg;
			break;
		case OPT_NAMESPACE:
			a->k8s.namespace = optarg;
			break;
		case OPT_NO_NAMESPACE:
			a->k8s.no_namespace = true;
			break;
		case OPT_RUNTIME_CLASS:
			a->k8s.runtime_class = optarg;
			break;
		case OPT_CILIUM:
			a->k8s.cilium = true;
			break;
		case OPT_ROOTFS:
			a->opts.rootfs = optarg;
			break;
		case OPT_BUNDLE:
			a->bundle = optarg;
			break;
		case OPT_NETNS:
			a->netns = optarg;
			break;
		case 'h':
			usage();
			return 1;
		case ':':
			return ar_cli_usage_error(CMD, AR_EXIT_USAGE, "option `%s` needs a value",
						  option_text(argv, optind));
		default:
			return ar_cli_usage_error(CMD, AR_EXIT_USAGE, "unknown option `%s`",
						  option_text(argv, optind));
		}
	}
	/* the command comes only after `--`: anything else left over is a mistake, most
	 * often a policy given without --policy */
	if (optind < argc && strcmp(argv[optind - 1], "--") != 0)
		return ar_cli_usage_error(CMD, AR_EXIT_USAGE,
					  "unexpected argument `%s` (a policy goes after --policy, "
					  "the command after --)",
					  argv[optind]);
	if (a->policy == NULL)
		return ar_cli_usage_error(CMD, AR_EXIT_USAGE, "--policy FILE is required");
	/* an OCI bundle's image is its rootfs: say so rather than ignore the flag */
	if (a->format == AR_RENDER_OCI && (a->opts.image != NULL || a->opts.proxy_image != NULL))
		return ar_cli_usage_error(CMD, AR_EXIT_USAGE,
					  "%s does not apply to --format oci (the bundle's rootfs "
					  "is the image)",
					  a->opts.image != NULL ? "--image" : "--proxy-image");
	if (a->format != AR_RENDER_K8S && a->format != AR_RENDER_K8S_JSON &&
	    (a->k8s.namespace || a->k8s.no_namespace || a->k8s.runtime_class || a->k8s.cilium))
		return ar_cli_usage_error(CMD, AR_EXIT_USAGE,
					  "--namespace, --no-namespace, --runtime-class and "
					  "--cilium apply to --format k8s and k8s-json only");
	a->k8s.json = a->format == AR_RENDER_K8S_JSON;
	if (a->format != AR_RENDER_OCI && (a->opts.rootfs || a->bundle || a->netns))
		return ar_cli_usage_error(CMD, AR_EXIT_USAGE, "%s needs --format oci",
					  a->opts.rootfs ? "--rootfs"
					  : a->bundle	 ? "--bundle"
							 : "--netns");
	a->opts.cmd = argv + optind;
	a->opts.n_cmd = (size_t)(argc - optind);
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
	return p->n_secrets > 0 ? write_ca_bundle(dir, err) : 0;
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
	policy = realpath(a->policy, NULL);
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
	/* docker and k8s would need the proxy container to hold the values and the agent
	 * to trust its CA: not rendered yet, and a plan without them would drop the
	 * secrets silently */
	if (p->n_secrets > 0)
		return ar_error_make(err, 0,
				     "%s: secrets: only --format oci renders them yet (with the "
				     "OCI hook's proxy; docs/secrets.md)",
				     p->origin);
	if (a->format == AR_RENDER_K8S || a->format == AR_RENDER_K8S_JSON)
		return ar_render_k8s(p, &a->opts, &a->k8s, out, err);
	ar_autoplan struct ar_render_plan *plan = NULL;
	if (ar_render_plan_build(p, &a->opts, &plan, err) < 0)
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
	int rc = parse_args(argc, argv, &a);
	if (rc != 0)
		return rc == 1 ? AR_EXIT_OK : rc;

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

/* agentrun render: print a policy as docker commands, JSON argv lists, a runnable sh
 * script or an OCI config.json (DESIGN §8). The work is in src/render/. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agentrun/cli.h"
#include "agentrun/policy.h"
#include "agentrun/render.h"
#include "agentrun/seccomp.h"
#include "agentrun/util.h"

#define CMD "render"

struct render_args {
	const char *policy;
	enum ar_render_format format;
	struct ar_render_options opts;
};

enum { OPT_PROXY_IMAGE = 256 };

static const struct option long_options[] = {
    {"policy", required_argument, NULL, 'p'},
    {"format", required_argument, NULL, 'f'},
    {"image", required_argument, NULL, 'i'},
    {"proxy-image", required_argument, NULL, OPT_PROXY_IMAGE},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void usage(void)
{
	printf("Usage: agentrun render --policy FILE [--format text|json|sh|oci] [--image IMAGE]\n"
	       "                       [--proxy-image IMAGE] [-- CMD [ARG...]]\n\n"
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
	       "  -i, --image IMAGE        the agent image (default: the policy's `image`)\n"
	       "      --proxy-image IMAGE  the image with agentrun as its entrypoint\n"
	       "                           (default: agentrun:%s)\n"
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
			if (ar_render_format_parse(optarg, &a->format) < 0)
				return ar_cli_usage_error(CMD, AR_EXIT_USAGE,
							  "--format: unknown format `%s` (text, "
							  "json, sh, oci)",
							  optarg);
			break;
		case 'i':
			a->opts.image = optarg;
			break;
		case OPT_PROXY_IMAGE:
			a->opts.proxy_image = optarg;
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
	a->opts.cmd = argv + optind;
	a->opts.n_cmd = (size_t)(argc - optind);
	return 0;
}

/* The seccomp profile text for the OCI config: embedded, none, or the policy's file. */
static int seccomp_text(const struct ar_policy *p, char **owned, const char **text, ar_error_t *err)
{
	*owned = NULL;
	*text = NULL;
	if (p->seccomp == NULL || strcmp(p->seccomp, "default") == 0) {
		*text = ar_seccomp_default_json;
		return 0;
	}
	if (strcmp(p->seccomp, "unconfined") == 0)
		return 0;
	if (ar_read_file(p->seccomp, 0, owned, NULL, err) < 0)
		return ar_error_wrap(err, "%s: seccomp", p->origin);
	*text = *owned;
	return 0;
}

static int render(const struct render_args *a, const struct ar_policy *p, struct ar_buf *out,
		  ar_error_t *err)
{
	if (a->format == AR_RENDER_OCI) {
		ar_autofree char *owned = NULL;
		const char *text;
		if (seccomp_text(p, &owned, &text, err) < 0)
			return -1;
		const char *origin = owned != NULL ? p->seccomp : "seccomp/default.json";
		return ar_render_oci(p, &a->opts, text, origin, out, err);
	}
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
	if (ar_write_all(STDOUT_FILENO, out.data, out.len) < 0) {
		ar_error_make(&err, errno, CMD ": write the output");
		ar_error_print(&err);
		return AR_EXIT_USAGE;
	}
	return AR_EXIT_OK;
}

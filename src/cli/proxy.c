/* agentrun proxy: the egress proxy on its own (DESIGN §5). The work is in src/proxy;
 * this file turns flags into a struct ar_proxy_config and runs the loop. */
#define _GNU_SOURCE
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/cli.h"
#include "agentrun/policy.h"
#include "agentrun/proxy.h"
#include "agentrun/util.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: agentrun proxy --listen ADDR:PORT --allow RULE... [OPTIONS]\n\n"
		"An HTTP/1.1 forward proxy that lets through only the allow-listed hosts\n"
		"(CONNECT tunnels and plain http:// requests), refuses the rest with 403 and a\n"
		"reason, and writes one audit line per request.\n\n"
		"Options:\n"
		"  --listen ADDR:PORT      listen here (repeatable; 127.0.0.1:3128, [::1]:3128)\n"
		"  --listen-fd N           serve an inherited, already listening socket\n"
		"  --allow RULE            allow host, *.domain or *, with optional :PORT\n"
		"                          (repeatable); deny is the default\n"
		"  --policy FILE           take allowed_hosts (and proxy.port when there is no\n"
		"                          --listen) from a policy; SIGHUP re-reads it\n"
		"  --audit FILE            append JSON Lines audit records to FILE\n"
		"  --allow-private CIDR    let name rules reach addresses in CIDR although it is\n"
		"                          loopback, private, link-local, CGNAT or metadata\n"
		"  --max-conns N           client connections at once (default 4096; 503 past it)\n"
		"  --connect-timeout SEC   upstream connect timeout (default 10; then 504)\n"
		"  --header-timeout SEC    time to send a request head (default 10; then 408)\n"
		"  --idle-timeout SEC      idle tunnel / exchange timeout (default 120)\n"
		"  --keepalive-timeout SEC idle client connection between requests (default 60)\n"
		"  --max-bytes-out HOST=BYTES  close HOST's tunnels past BYTES sent in all\n"
		"                          (413 in the audit; repeatable; not with --policy)\n"
		"  --sni off|check|require a CONNECT's TLS server name must match its host\n"
		"                          (421 otherwise; not with --policy)\n"
		"  --dns-files-only        resolve from /etc/hosts only, never query DNS\n"
		"  -h, --help              show this help\n\n"
		"SIGHUP reloads --policy without dropping open tunnels; SIGTERM/SIGINT stop and\n"
		"print a summary. Exit status: 0 after a clean stop, 2 bad input or usage.\n");
}

enum {
	OPT_LISTEN = 256,
	OPT_LISTEN_FD,
	OPT_ALLOW,
	OPT_POLICY,
	OPT_AUDIT,
	OPT_ALLOW_PRIVATE,
	OPT_MAX_CONNS,
	OPT_CONNECT_TIMEOUT,
	OPT_HEADER_TIMEOUT,
	OPT_IDLE_TIMEOUT,
	OPT_KEEPALIVE_TIMEOUT,
	OPT_DNS_FILES,
	OPT_MAX_BYTES_OUT,
	OPT_SNI,
};

static const struct option options[] = {
    {"listen", required_argument, NULL, OPT_LISTEN},
    {"listen-fd", required_argument, NULL, OPT_LISTEN_FD},
    {"allow", required_argument, NULL, OPT_ALLOW},
    {"policy", required_argument, NULL, OPT_POLICY},
    {"audit", required_argument, NULL, OPT_AUDIT},
    {"allow-private", required_argument, NULL, OPT_ALLOW_PRIVATE},
    {"max-conns", required_argument, NULL, OPT_MAX_CONNS},
    {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
    {"header-timeout", required_argument, NULL, OPT_HEADER_TIMEOUT},
    {"idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT},
    {"keepalive-timeout", required_argument, NULL, OPT_KEEPALIVE_TIMEOUT},
    {"dns-files-only", no_argument, NULL, OPT_DNS_FILES},
    {"max-bytes-out", required_argument, NULL, OPT_MAX_BYTES_OUT},
    {"sni", required_argument, NULL, OPT_SNI},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* Which config field a timeout flag sets. */
static const struct {
	int opt;
	const char *flag;
	size_t field;
} timeouts[] = {
    {OPT_CONNECT_TIMEOUT, "--connect-timeout",
     offsetof(struct ar_proxy_config, connect_timeout_ms)},
    {OPT_HEADER_TIMEOUT, "--header-timeout", offsetof(struct ar_proxy_config, header_timeout_ms)},
    {OPT_IDLE_TIMEOUT, "--idle-timeout", offsetof(struct ar_proxy_config, idle_timeout_ms)},
    {OPT_KEEPALIVE_TIMEOUT, "--keepalive-timeout",
     offsetof(struct ar_proxy_config, keepalive_timeout_ms)},
};

struct cli_state {
	struct ar_proxy_config cfg;
	char **allow;
	size_t n_allow;
	struct ar_cidr cidrs[64];
	/* --max-bytes-out and --sni become the proxy section of an in-memory policy,
	 * read by the policy parser so the flags and the file share one validation */
	struct ar_buf budgets;
	const char *sni;
	struct ar_policy *settings;
};

/* --max-bytes-out HOST=BYTES: one more `"HOST": BYTES` member. */
static int add_budget(struct cli_state *st, const char *arg)
{
	const char *eq = strrchr(arg, '=');
	int64_t v;
	if (eq == NULL || eq == arg || ar_parse_int(eq + 1, 1, INT64_MAX, &v) == -1)
		return ar_cli_usage_error("proxy", AR_EXIT_USAGE,
					  "--max-bytes-out `%s`: expected HOST=BYTES", arg);
	ar_autofree char *host = ar_xstrndup(arg, (size_t)(eq - arg));
	if (st->budgets.len > 0)
		ar_buf_putc(&st->budgets, ',');
	ar_json_quote(&st->budgets, host);
	ar_buf_printf(&st->budgets, ":%" PRId64, v);
	return 0;
}

static int build_settings(struct cli_state *st)
{
	ar_auto_error ar_error_t err = NULL;
	ar_autobuf struct ar_buf json = {0};

	if (st->budgets.len == 0 && st->sni == NULL)
		return 0;
	if (st->cfg.policy_path != NULL)
		return ar_cli_usage_error("proxy", AR_EXIT_USAGE,
					  "--max-bytes-out and --sni come from the policy's proxy "
					  "section when --policy is given");
	ar_buf_printf(&json, "{\"proxy\": {\"max_bytes_out\": {%s}",
		      st->budgets.data ? st->budgets.data : "");
	if (st->sni != NULL) {
		ar_buf_puts(&json, ", \"sni\": ");
		ar_json_quote(&json, st->sni);
	}
	ar_buf_puts(&json, "}}");
	if (ar_policy_parse(json.data, json.len, "--max-bytes-out/--sni", &st->settings, &err) ==
	    -1) {
		ar_error_wrap(&err, "proxy");
		ar_error_print(&err);
		return AR_EXIT_USAGE;
	}
	st->cfg.policy = st->settings;
	return 0;
}

static int set_timeout(struct cli_state *st, int opt, const char *arg)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(timeouts); i++) {
		if (timeouts[i].opt != opt)
			continue;
		int64_t ms;
		/* seconds with up to three decimals: the same grammar as cpus ("0.5") */
		if (ar_parse_cpus(arg, &ms) == -1 || ms > 86400000)
			return ar_cli_usage_error("proxy", AR_EXIT_USAGE,
						  "%s `%s`: expected seconds (e.g. 10 or 0.5)",
						  timeouts[i].flag, arg);
		*(int *)((char *)&st->cfg + timeouts[i].field) = (int)ms;
		return 0;
	}
	return AR_EXIT_USAGE;
}

static int parse_opt(struct cli_state *st, int opt, const char *arg)
{
	struct ar_proxy_config *cfg = &st->cfg;
	int64_t v;
	switch (opt) {
	case OPT_LISTEN:
		if (cfg->n_listen == AR_PROXY_MAX_LISTEN)
			return ar_cli_usage_error("proxy", AR_EXIT_USAGE, "too many --listen");
		cfg->listen[cfg->n_listen++] = arg;
		return 0;
	case OPT_LISTEN_FD:
		if (ar_parse_int(arg, 3, 1 << 20, &v) == -1 ||
		    cfg->n_listen_fds == AR_PROXY_MAX_LISTEN)
			return ar_cli_usage_error("proxy", AR_EXIT_USAGE,
						  "--listen-fd `%s`: expected a descriptor >= 3",
						  arg);
		cfg->listen_fds[cfg->n_listen_fds++] = (int)v;
		return 0;
	case OPT_ALLOW:
		st->allow = ar_xrealloc(st->allow, (st->n_allow + 2) * sizeof(char *));
		st->allow[st->n_allow++] = ar_xstrdup(arg);
		st->allow[st->n_allow] = NULL;
		return 0;
	case OPT_POLICY:
		cfg->policy_path = arg;
		return 0;
	case OPT_AUDIT:
		cfg->audit_path = arg;
		return 0;
	case OPT_ALLOW_PRIVATE:
		if (cfg->n_allow_private == AR_ARRAY_SIZE(st->cidrs) ||
		    ar_cidr_parse(arg, &st->cidrs[cfg->n_allow_private]) == -1)
			return ar_cli_usage_error("proxy", AR_EXIT_USAGE,
						  "--allow-private `%s`: expected a CIDR "
						  "(127.0.0.0/8, fd00::/8, 10.1.2.3)",
						  arg);
		cfg->n_allow_private++;
		return 0;
	case OPT_MAX_CONNS:
		if (ar_parse_int(arg, 1, 1000000, &v) == -1)
			return ar_cli_usage_error("proxy", AR_EXIT_USAGE,
						  "--max-conns `%s`: expected 1..1000000", arg);
		cfg->max_conns = (int)v;
		return 0;
	case OPT_DNS_FILES:
		cfg->dns_files_only = true;
		return 0;
	case OPT_MAX_BYTES_OUT:
		return add_budget(st, arg);
	case OPT_SNI:
		st->sni = arg;
		return 0;
	default:
		return set_timeout(st, opt, arg);
	}
}

/* Without --listen, a policy's proxy.port on loopback. */
static int listen_from_policy(struct cli_state *st, char *buf, size_t size)
{
	ar_auto_error ar_error_t err = NULL;
	ar_autopolicy struct ar_policy *p = NULL;
	if (ar_policy_load(st->cfg.policy_path, &p, &err) == -1) {
		ar_error_print(&err);
		return AR_EXIT_USAGE;
	}
	snprintf(buf, size, "127.0.0.1:%d", p->proxy.port);
	st->cfg.listen[st->cfg.n_listen++] = buf;
	return 0;
}

static int serve(struct cli_state *st)
{
	ar_auto_error ar_error_t err = NULL;
	ar_autoproxy struct ar_proxy *px = NULL;
	if (ar_proxy_create(&st->cfg, &px, &err) == -1) {
		ar_error_wrap(&err, "proxy");
		ar_error_print(&err);
		return AR_EXIT_USAGE;
	}
	if (ar_proxy_run(px, &err) == -1) {
		ar_error_wrap(&err, "proxy");
		ar_error_print(&err);
		return AR_EXIT_RUN_FAIL;
	}
	return AR_EXIT_OK;
}

int ar_cmd_proxy(int argc, char **argv)
{
	struct cli_state st = {0};
	ar_proxy_config_init(&st.cfg);
	char policy_listen[64];
	int opt, rc = 0;
	optind = 1;
	opterr = 0;
	while (rc == 0 && (opt = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
		if (opt == 'h') {
			usage(stdout);
			ar_strv_free(st.allow);
			return AR_EXIT_OK;
		}
		if (opt == '?' || opt == ':') {
			rc = ar_cli_usage_error("proxy", AR_EXIT_USAGE,
						"unknown option or missing value: `%s`",
						argv[optind - 1]);
			break;
		}
		rc = parse_opt(&st, opt, optarg);
	}
	if (rc == 0 && optind < argc)
		rc = ar_cli_usage_error("proxy", AR_EXIT_USAGE, "unexpected argument `%s`",
					argv[optind]);
	if (rc == 0 && st.cfg.n_listen == 0 && st.cfg.n_listen_fds == 0) {
		if (st.cfg.policy_path)
			rc = listen_from_policy(&st, policy_listen, sizeof(policy_listen));
		else
			rc = ar_cli_usage_error("proxy", AR_EXIT_USAGE,
						"--listen ADDR:PORT or --listen-fd N is required");
	}
	if (rc == 0)
		rc = build_settings(&st);
	if (rc == 0) {
		st.cfg.allow = st.allow;
		st.cfg.n_allow = st.n_allow;
		st.cfg.allow_private = st.cidrs;
		st.cfg.log_fd = 2;
		st.cfg.handle_signals = true;
		rc = serve(&st);
	}
	ar_strv_free(st.allow);
	ar_buf_free(&st.budgets);
	ar_policy_free(st.settings);
	return rc;
}

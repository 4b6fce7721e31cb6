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
		"  --sni off|check|require a tunnel that starts as TLS must name its CONNECT\n"
		"                          host (default check; require also refuses non-TLS\n"
		"                          tunnels; 421 otherwise; not with --policy)\n"
		"  --pass-forwarded        keep a client's Forwarded and X-Forwarded-For fields\n"
		"  --learn                 learn mode: let names outside the list through and\n"
		"                          audit them as learned (docs/learn.md)\n"
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
	OPT_PASS_FORWARDED,
	OPT_LEARN,
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
    {"pass-forwarded", no_argument, NULL, OPT_PASS_FORWARDED},
    {"learn", no_argument, NULL, OPT_LEARN},
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
	/* --max-bytes-out and --sni: the egress object's, unless a policy gives them */
	struct ar_byte_budget *budgets;
	size_t n_budgets;
	bool have_sni;
	enum ar_sni_mode sni;
};

static const struct {
	const char *name;
	enum ar_sni_mode mode;
} sni_modes[] = {
    {"off", AR_SNI_OFF},
    {"check", AR_SNI_CHECK},
    {"require", AR_SNI_REQUIRE},
};

static int set_sni(struct cli_state *st, const char *arg)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(sni_modes); i++)
		if (strcmp(arg, sni_modes[i].name) == 0) {
			st->sni = sni_modes[i].mode;
			st->have_sni = true;
			return 0;
		}
	return ar_cli_usage_error("proxy", AR_EXIT_USAGE,
				  "--sni `%s`: must be off, check or require", arg);
}

/* --max-bytes-out HOST=BYTES: one more budget, the host canonical as the policy's. */
static int add_budget(struct cli_state *st, const char *arg)
{
	ar_auto_error ar_error_t err = NULL;
	const char *eq = strrchr(arg, '=');
	struct ar_host h;
	int64_t v;
	if (eq == NULL || eq == arg || ar_parse_int(eq + 1, 1, INT64_MAX, &v) == -1)
		return ar_cli_usage_error("proxy", AR_EXIT_USAGE,
					  "--max-bytes-out `%s`: expected HOST=BYTES", arg);
	if (ar_host_canonicalize_n(arg, (size_t)(eq - arg), &h, &err) == -1)
		return ar_cli_usage_error("proxy", AR_EXIT_USAGE, "--max-bytes-out `%s`: %s", arg,
					  err->msg);
	st->budgets = ar_xrealloc(st->budgets, (st->n_budgets + 1) * sizeof(*st->budgets));
	st->budgets[st->n_budgets].host = ar_xstrdup(h.name);
	st->budgets[st->n_budgets++].max_bytes_out = v;
	return 0;
}

/* Without --policy the flags are the whole egress object, built here. */
static int build_egress(struct cli_state *st)
{
	ar_auto_error ar_error_t err = NULL;
	struct ar_egress_settings s;
	if (st->cfg.policy_path != NULL) {
		if (st->n_budgets == 0 && !st->have_sni)
			return 0;
		return ar_cli_usage_error("proxy", AR_EXIT_USAGE,
					  "--max-bytes-out and --sni come from the policy's proxy "
					  "section when --policy is given");
	}
	ar_egress_settings_init(&s);
	s.allow = st->allow;
	s.n_allow = st->n_allow;
	s.budgets = st->budgets;
	s.n_budgets = st->n_budgets;
	if (st->have_sni)
		s.sni = st->sni;
	s.allow_private = st->cidrs;
	s.n_allow_private = st->cfg.n_allow_private;
	s.connect_timeout_ms = st->cfg.connect_timeout_ms;
	s.header_timeout_ms = st->cfg.header_timeout_ms;
	s.idle_timeout_ms = st->cfg.idle_timeout_ms;
	s.keepalive_timeout_ms = st->cfg.keepalive_timeout_ms;
	s.pass_forwarded = st->cfg.pass_forwarded;
	s.learn = st->cfg.learn;
	if (ar_egress_new(&s, &st->cfg.egress, &err) == -1) {
		ar_error_wrap(&err, "proxy");
		ar_error_print(&err);
		return AR_EXIT_USAGE;
	}
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
		return set_sni(st, arg);
	case OPT_PASS_FORWARDED:
		cfg->pass_forwarded = true;
		return 0;
	case OPT_LEARN:
		cfg->learn = true;
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
		rc = build_egress(&st);
	if (rc == 0) {
		st.cfg.allow = st.allow;
		st.cfg.n_allow = st.n_allow;
		st.cfg.allow_private = st.cidrs;
		st.cfg.log_fd = 2;
		st.cfg.handle_signals = true;
		rc = serve(&st);
	}
	ar_strv_free(st.allow);
	for (size_t i = 0; i < st.n_budgets; i++)
		free(st.budgets[i].host);
	free(st.budgets);
	ar_egress_unref(st.cfg.egress);
	return rc;
}

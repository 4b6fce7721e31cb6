/* agentrun proxy: the egress proxy on its own (DESIGN §5). The work is in src/proxy;
 * this file turns flags into a struct ar_proxy_config and runs the loop. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/cli.h"
#include "agentrun/policy.h"
#include "agentrun/proxy.h"
#include "agentrun/util.h"

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

static int set_sni(void *ctx, const struct ar_opt *opt, const char *arg, ar_error_t *err)
{
	struct cli_state *st = ctx;
	for (size_t i = 0; i < AR_ARRAY_SIZE(sni_modes); i++)
		if (strcmp(arg, sni_modes[i].name) == 0) {
			st->sni = sni_modes[i].mode;
			st->have_sni = true;
			return 0;
		}
	return ar_error_make(err, 0, "--sni `%s`: must be off, check or require", arg);
}

/* --max-bytes-out HOST=BYTES: one more budget, the host canonical as the policy's. */
static int add_budget(void *ctx, const struct ar_opt *opt, const char *arg, ar_error_t *err)
{
	struct cli_state *st = ctx;
	const char *eq = strrchr(arg, '=');
	struct ar_host h;
	int64_t v;
	if (eq == NULL || eq == arg || ar_parse_int(eq + 1, 1, INT64_MAX, &v) == -1)
		return ar_error_make(err, 0,
				     "--max-bytes-out `%s`: expected HOST=BYTES, BYTES from 1 to "
				     "%" PRId64,
				     arg, (int64_t)INT64_MAX);
	if (ar_host_canonicalize_n(arg, (size_t)(eq - arg), &h, err) == -1)
		return ar_error_wrap(err, "--max-bytes-out `%s`", arg);
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

/* Seconds with up to three decimals (the grammar of cpus, "0.5") into an int of ms. */
static int set_timeout(void *ctx, const struct ar_opt *opt, const char *arg, ar_error_t *err)
{
	int64_t ms;
	if (ar_parse_cpus(arg, &ms) == -1 || ms > 86400000)
		return ar_error_make(err, 0,
				     "%s `%s`: expected seconds from 0.001 to 86400 (e.g. 10 or "
				     "0.5)",
				     opt->flag, arg);
	*(int *)((char *)ctx + opt->off) = (int)ms;
	return 0;
}

static int add_listen(void *ctx, const struct ar_opt *opt, const char *arg, ar_error_t *err)
{
	struct ar_proxy_config *cfg = &((struct cli_state *)ctx)->cfg;
	if (cfg->n_listen == AR_PROXY_MAX_LISTEN)
		return ar_error_make(err, 0, "--listen: at most %d", AR_PROXY_MAX_LISTEN);
	cfg->listen[cfg->n_listen++] = arg;
	return 0;
}

static int add_listen_fd(void *ctx, const struct ar_opt *opt, const char *arg, ar_error_t *err)
{
	struct ar_proxy_config *cfg = &((struct cli_state *)ctx)->cfg;
	int64_t v;
	if (ar_parse_int(arg, 3, 1 << 20, &v) == -1 || cfg->n_listen_fds == AR_PROXY_MAX_LISTEN)
		return ar_error_make(err, 0, "--listen-fd `%s`: expected a descriptor from 3 to %d",
				     arg, 1 << 20);
	cfg->listen_fds[cfg->n_listen_fds++] = (int)v;
	return 0;
}

static int add_allow(void *ctx, const struct ar_opt *opt, const char *arg, ar_error_t *err)
{
	struct cli_state *st = ctx;
	st->allow = ar_xrealloc(st->allow, (st->n_allow + 2) * sizeof(char *));
	st->allow[st->n_allow++] = ar_xstrdup(arg);
	st->allow[st->n_allow] = NULL;
	return 0;
}

static int add_private(void *ctx, const struct ar_opt *opt, const char *arg, ar_error_t *err)
{
	struct cli_state *st = ctx;
	struct ar_proxy_config *cfg = &st->cfg;
	if (cfg->n_allow_private == AR_ARRAY_SIZE(st->cidrs) ||
	    ar_cidr_parse(arg, &st->cidrs[cfg->n_allow_private]) == -1)
		return ar_error_make(
		    err, 0,
		    "--allow-private `%s`: expected a CIDR (127.0.0.0/8, fd00::/8, "
		    "10.1.2.3), at most %zu",
		    arg, AR_ARRAY_SIZE(st->cidrs));
	cfg->n_allow_private++;
	return 0;
}

static int set_max_conns(void *ctx, const struct ar_opt *opt, const char *arg, ar_error_t *err)
{
	int64_t v;
	if (ar_parse_int(arg, 1, 1000000, &v) == -1)
		return ar_error_make(err, 0, "--max-conns `%s`: expected 1 to 1000000", arg);
	((struct cli_state *)ctx)->cfg.max_conns = (int)v;
	return 0;
}

#define CFG(field) offsetof(struct cli_state, cfg.field)

static const struct ar_opt opts[] = {
    {"--listen", 0, "ADDR:PORT", "listen here (repeatable; 127.0.0.1:3128, [::1]:3128)", add_listen,
     0},
    {"--listen-fd", 0, "N", "serve an inherited, already listening socket", add_listen_fd, 0},
    {"--allow", 0, "RULE",
     "allow host, *.domain or *, with optional :PORT\n(repeatable); deny is the default", add_allow,
     0},
    {"--policy", 'p', "FILE",
     "take allowed_hosts (and proxy.port when there is no\n--listen) from a policy; SIGHUP "
     "re-reads it",
     ar_opt_str, CFG(policy_path)},
    {"--audit", 0, "FILE", "append JSON Lines audit records to FILE", ar_opt_str, CFG(audit_path)},
    {"--allow-private", 0, "CIDR",
     "let name rules reach addresses in CIDR although it is\nloopback, private, link-local, "
     "CGNAT or metadata",
     add_private, 0},
    {"--max-conns", 0, "N", "client connections at once (default 4096; 503 past it)", set_max_conns,
     0},
    {"--connect-timeout", 0, "SEC", "upstream connect timeout (default 10; then 504)", set_timeout,
     CFG(connect_timeout_ms)},
    {"--header-timeout", 0, "SEC", "time to send a request head (default 10; then 408)",
     set_timeout, CFG(header_timeout_ms)},
    {"--idle-timeout", 0, "SEC", "idle tunnel / exchange timeout (default 120)", set_timeout,
     CFG(idle_timeout_ms)},
    {"--keepalive-timeout", 0, "SEC", "idle client connection between requests (default 60)",
     set_timeout, CFG(keepalive_timeout_ms)},
    {"--max-bytes-out", 0, "HOST=BYTES",
     "close HOST's tunnels past BYTES sent in all\n(413 in the audit; repeatable; not with "
     "--policy)",
     add_budget, 0},
    {"--sni", 0, "off|check|require",
     "a tunnel that starts as TLS must name its CONNECT\nhost (default check; require also "
     "refuses non-TLS\ntunnels; 421 otherwise; not with --policy)",
     set_sni, 0},
    {"--pass-forwarded", 0, NULL, "keep a client's Forwarded and X-Forwarded-For fields",
     ar_opt_true, CFG(pass_forwarded)},
    {"--learn", 0, NULL,
     "learn mode: let names outside the list through and\naudit them as learned "
     "(docs/learn.md)",
     ar_opt_true, CFG(learn)},
    {"--dns-files-only", 0, NULL, "resolve from /etc/hosts only, never query DNS", ar_opt_true,
     CFG(dns_files_only)},
    {NULL},
};

const struct ar_cli_cmd ar_cli_proxy = {
    .name = "proxy",
    .fn = ar_cmd_proxy,
    .summary = "run the egress proxy on its own",
    .synopsis = "proxy --listen ADDR:PORT --allow RULE... [OPTIONS]",
    .about = "An HTTP/1.1 forward proxy that lets through only the allow-listed hosts\n"
	     "(CONNECT tunnels and plain http:// requests), refuses the rest with 403 and a\n"
	     "reason, and writes one audit line per request.\n\n"
	     "SIGHUP reloads --policy without dropping open tunnels; SIGTERM/SIGINT stop and\n"
	     "print a summary.",
    .opts = opts,
    .exit_status = "0 after a clean stop, 2 bad input or usage, 125 when the proxy failed\n"
		   "while running.",
    .usage_exit = AR_EXIT_USAGE,
};

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
	ar_autoopts struct ar_opt_result r = {0};
	char policy_listen[64];
	int rc = 0;
	if (ar_cli_parse(&ar_cli_proxy, argc, argv, &st, &r, &rc) != 0)
		goto out;
	rc = 0;
	if (st.cfg.n_listen == 0 && st.cfg.n_listen_fds == 0) {
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
out:
	ar_strv_free(st.allow);
	for (size_t i = 0; i < st.n_budgets; i++)
		free(st.budgets[i].host);
	free(st.budgets);
	ar_egress_unref(st.cfg.egress);
	return rc;
}

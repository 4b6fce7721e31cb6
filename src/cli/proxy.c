/* agentrun proxy: the egress proxy on its own (DESIGN §5). The work is in src/proxy;
 * this file turns flags into a struct ar_proxy_config and runs the loop. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "agentrun/cli.h"
#include "agentrun/policy.h"
#include "agentrun/proxy.h"
#include "agentrun/secrets.h"
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
	/* --secret, --secret-host, --secret-placeholder (NAME=PLACEHOLDER entries),
	 * --upstream-ca, --ca-bundle: a rendered docker or Kubernetes proxy's secrets */
	struct ar_secret_spec *secrets;
	size_t n_secrets;
	char **placeholders;
	size_t n_placeholders;
	const char *upstream_ca;
	const char *ca_bundle;
	struct ar_secrets *set;
	struct ar_proxy_tls *tls;
	char *bundle_pem;
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

/* Append a copy of s to the NULL-terminated vector *v of *n strings. */
static void strv_push(char ***v, size_t *n, const char *s)
{
	*v = ar_xrealloc(*v, (*n + 2) * sizeof(char *));
	(*v)[(*n)++] = ar_xstrdup(s);
	(*v)[*n] = NULL;
}

static int add_allow(void *ctx, const struct ar_opt *opt, const char *arg, ar_error_t *err)
{
	struct cli_state *st = ctx;
	strv_push(&st->allow, &st->n_allow, arg);
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

static int set_busy_poll(void *ctx, const struct ar_opt *opt, const char *arg, ar_error_t *err)
{
	if (ar_proxy_busy_poll_arg(arg, &((struct cli_state *)ctx)->cfg.busy_poll_us) == -1)
		return ar_error_make(err, 0,
				     "--busy-poll `%s`: expected 0 (never) to %d microseconds", arg,
				     AR_PROXY_BUSY_POLL_US_MAX);
	return 0;
}

/* ---- secrets (docs/secrets.md, "Under docker and Kubernetes") ---- */

static bool var_name(const char *s, size_t n)
{
	if (n == 0 || n > AR_POLICY_SECRET_NAME_MAX || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}

/* NAME=VALUE with NAME a variable name: *name_len and the value. */
static const char *named(const struct ar_opt *opt, const char *arg, size_t *name_len,
			 ar_error_t *err)
{
	const char *eq = strchr(arg, '=');
	if (eq == NULL || eq[1] == '\0' || !var_name(arg, (size_t)(eq - arg))) {
		ar_error_make(err, 0,
			      "%s `%s`: expected %s, NAME a variable name of at most %d "
			      "characters",
			      opt->flag, arg, opt->value, AR_POLICY_SECRET_NAME_MAX);
		return NULL;
	}
	*name_len = (size_t)(eq - arg);
	return eq + 1;
}

static struct ar_secret_spec *find_secret(struct cli_state *st, const char *name, size_t n)
{
	for (size_t i = 0; i < st->n_secrets; i++)
		if (strlen(st->secrets[i].name) == n && strncmp(st->secrets[i].name, name, n) == 0)
			return &st->secrets[i];
	return NULL;
}

/* --secret NAME=env:VAR|file:PATH: a secret whose value the proxy reads itself. */
static int add_secret(void *ctx, const struct ar_opt *opt, const char *arg, ar_error_t *err)
{
	struct cli_state *st = ctx;
	size_t n;
	const char *from = named(opt, arg, &n, err);
	if (from == NULL)
		return -1;
	if (find_secret(st, arg, n) != NULL)
		return ar_error_make(err, 0, "--secret `%s`: %.*s is given twice", arg, (int)n,
				     arg);
	if (!(strncmp(from, "env:", 4) == 0 && var_name(from + 4, strlen(from + 4))) &&
	    !(strncmp(from, "file:/", 6) == 0))
		return ar_error_make(err, 0,
				     "--secret `%s`: the source must be env:VARIABLE or "
				     "file:/absolute/path",
				     arg);
	if (st->n_secrets == AR_POLICY_SECRETS_MAX)
		return ar_error_make(err, 0, "--secret: at most %d", AR_POLICY_SECRETS_MAX);
	st->secrets = ar_xrealloc(st->secrets, (st->n_secrets + 1) * sizeof(*st->secrets));
	st->secrets[st->n_secrets++] =
	    (struct ar_secret_spec){.name = ar_xstrndup(arg, n), .from = ar_xstrdup(from)};
	return 0;
}

/* --secret-host NAME=RULE: a host the secret may go to (one of the --allow rules). */
static int add_secret_host(void *ctx, const struct ar_opt *opt, const char *arg, ar_error_t *err)
{
	struct cli_state *st = ctx;
	size_t n;
	const char *rule = named(opt, arg, &n, err);
	if (rule == NULL)
		return -1;
	struct ar_secret_spec *x = find_secret(st, arg, n);
	if (x == NULL)
		return ar_error_make(err, 0, "--secret-host `%s`: no --secret %.*s before it", arg,
				     (int)n, arg);
	strv_push(&x->hosts, &x->n_hosts, rule);
	return 0;
}

/* --secret-placeholder NAME=PLACEHOLDER: what the agent's environment holds. */
static int add_placeholder(void *ctx, const struct ar_opt *opt, const char *arg, ar_error_t *err)
{
	struct cli_state *st = ctx;
	size_t n;
	if (named(opt, arg, &n, err) == NULL)
		return -1;
	strv_push(&st->placeholders, &st->n_placeholders, arg);
	return 0;
}

#define CFG(field) offsetof(struct cli_state, cfg.field)
#define ST(field)  offsetof(struct cli_state, field)

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
    {"--busy-poll", 0, "USEC",
     "poll up to USEC before sleeping, adaptively (default\n100; 0: never; docs/proxy.md)",
     set_busy_poll, 0},
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
    {"--secret", 0, "NAME=SOURCE",
     "a secret the agent holds only a placeholder of; its\nvalue from env:VARIABLE or "
     "file:/PATH, read here\n(repeatable; docs/secrets.md; not with --policy)",
     add_secret, 0},
    {"--secret-host", 0, "NAME=RULE",
     "a host the secret's value may go to, one of the\n--allow rules (repeatable; HTTPS "
     "to it is\nterminated with a sandbox CA made at start)",
     add_secret_host, 0},
    {"--secret-placeholder", 0, "NAME=PLACEHOLDER",
     "the placeholder the agent's environment holds for\nthe secret "
     "(agentrun-secret-NAME-<32 hex>, what\nagentrun render wrote)",
     add_placeholder, 0},
    {"--upstream-ca", 0, "FILE", "PEM CAs also trusted for a secret's hosts (proxy.upstream_ca)",
     ar_opt_str, ST(upstream_ca)},
    {"--ca-bundle", 0, "FILE",
     "write the trusted roots and the sandbox CA to FILE\nbefore serving (a volume the agent "
     "reads); they are\nalso served at GET /agentrun/ca-bundle.pem",
     ar_opt_str, ST(ca_bundle)},
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

/* Every secret complete: hosts among --allow, a placeholder; no stray placeholder. */
static int check_secrets(struct cli_state *st, ar_error_t *err)
{
	if (st->n_secrets > 0 && st->cfg.policy_path != NULL)
		return ar_error_make(err, 0,
				     "--secret: not with --policy (give the rules as --allow)");
	if (st->n_secrets == 0 && (st->n_placeholders || st->upstream_ca || st->ca_bundle))
		return ar_error_make(err, 0,
				     "--secret-placeholder, --upstream-ca and --ca-bundle "
				     "need --secret");
	for (size_t i = 0; i < st->n_secrets; i++) {
		const struct ar_secret_spec *x = &st->secrets[i];
		if (x->n_hosts == 0)
			return ar_error_make(err, 0, "--secret %s: no --secret-host %s=RULE",
					     x->name, x->name);
		for (size_t k = 0; k < x->n_hosts; k++) {
			size_t a = 0;
			while (a < st->n_allow && strcasecmp(st->allow[a], x->hosts[k]) != 0)
				a++;
			if (a == st->n_allow)
				return ar_error_make(
				    err, 0,
				    "--secret-host %s=%s: not one of the --allow "
				    "rules (a secret goes only where the agent may "
				    "talk)",
				    x->name, x->hosts[k]);
		}
	}
	for (size_t i = 0; i < st->n_placeholders; i++)
		if (find_secret(st, st->placeholders[i], strcspn(st->placeholders[i], "=")) == NULL)
			return ar_error_make(err, 0,
					     "--secret-placeholder `%s`: no --secret of that "
					     "name",
					     st->placeholders[i]);
	return 0;
}

/* The roots this proxy trusts and the sandbox CA after them: what the agent trusts. */
static int make_bundle(struct cli_state *st, ar_error_t *err)
{
	char ca[8192];
	ar_autofree char *roots = NULL;
	size_t len = 0;
	const char *path = ar_proxy_tls_host_bundle("/");
	if (path != NULL && ar_read_file(path, 16 << 20, &roots, &len, err) == -1)
		return -1;
	int n = ar_proxy_tls_ca_pem(st->tls, ca, sizeof(ca));
	if (n <= 0)
		return ar_error_make(err, 0, "secrets: the sandbox CA has no PEM");
	st->bundle_pem = ar_xasprintf("%.*s%s%.*s", (int)len, roots ? roots : "",
				      len && roots[len - 1] != '\n' ? "\n" : "", n, ca);
	if (st->ca_bundle != NULL &&
	    ar_write_file(st->ca_bundle, st->bundle_pem, strlen(st->bundle_pem), err) == -1)
		return ar_error_wrap(err, "--ca-bundle");
	return 0;
}

/* The flags' secrets: the placeholders the agent holds, the values read here into the
 * vault (not dumpable from here on), the TLS module and a sandbox CA of this process's
 * own, and the bundle the agent is to trust. */
static int prepare_secrets(struct cli_state *st, ar_error_t *err)
{
	char ca_name[64];
	if (check_secrets(st, err) == -1)
		return -1;
	if (st->n_secrets == 0)
		return 0;
	snprintf(ca_name, sizeof(ca_name), "agentrun sandbox CA proxy-%d", (int)getpid());
	if (ar_secrets_new_specs(st->secrets, st->n_secrets, "agentrun proxy", &st->set, err) ==
		-1 ||
	    ar_secrets_adopt(st->set, st->placeholders, "agentrun proxy --secret-placeholder",
			     err) == -1)
		return -1;
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1)
		return ar_error_make(err, errno, "secrets: not dumpable");
	if (ar_secrets_load(st->set, err) == -1 ||
	    ar_proxy_tls_prepare(st->upstream_ca, NULL, ca_name, &st->tls, err) == -1 ||
	    make_bundle(st, err) == -1)
		return -1;
	st->cfg.secrets = st->set;
	st->cfg.tls = st->tls;
	st->cfg.ca_bundle_pem = st->bundle_pem;
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
		ar_auto_error ar_error_t err = NULL;
		if (prepare_secrets(&st, &err) == -1) {
			ar_error_wrap(&err, "proxy");
			ar_error_print(&err);
			rc = AR_EXIT_USAGE;
		}
	}
	if (rc == 0) {
		st.cfg.allow = st.allow;
		st.cfg.n_allow = st.n_allow;
		st.cfg.allow_private = st.cidrs;
		st.cfg.log_fd = 2;
		st.cfg.handle_signals = true;
		rc = serve(&st);
	}
out:
	ar_secrets_free(st.set); /* the values wiped */
	ar_proxy_tls_free(st.tls);
	free(st.bundle_pem);
	for (size_t i = 0; i < st.n_secrets; i++) {
		free(st.secrets[i].name);
		free(st.secrets[i].from);
		ar_strv_free(st.secrets[i].hosts);
	}
	free(st.secrets);
	ar_strv_free(st.placeholders);
	ar_strv_free(st.allow);
	for (size_t i = 0; i < st.n_budgets; i++)
		free(st.budgets[i].host);
	free(st.budgets);
	ar_egress_unref(st.cfg.egress);
	return rc;
}

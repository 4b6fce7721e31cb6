/* Unit tests for the docker plan and its printers (the OCI config: test_oci.c). Policies are built
 * with ar_policy_parse from JSON strings; JSON outputs are read back with cJSON. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>

#include "../spec_fixture.h"

#include "agentrun/render.h"

static const char triage_json[] =
    AR_TEST_TRIAGE_JSON(", \"allow_private\": [\"172.16.0.0/12\", \"fd00::/8\"]");

static const char *const triage_steps[][80] = {
    {"docker", "network", "create", "--internal", "-o",
     "com.docker.network.bridge.inhibit_ipv4=true", "triage-net", NULL},
    {"docker", "network", "create", "triage-egress", NULL},
    {"docker",
     "run",
     "-d",
     "--name",
     "triage-proxy",
     "--network",
     "triage-egress",
     "--read-only",
     "--cap-drop",
     "ALL",
     "--security-opt",
     "no-new-privileges",
     "--cgroupns",
     "private",
     "--pids-limit",
     "64",
     "--memory",
     "128m",
     "--memory-swap",
     "128m",
     "--user",
     "65534:65534",
     "-v",
     "triage-audit:/var/log/agentrun",
     "--tmpfs",
     "/tmp",
     "agentrun:" AGENTRUN_VERSION,
     "proxy",
     "--listen",
     "0.0.0.0:3128",
     "--allow",
     "api.anthropic.com",
     "--allow",
     "*.github.com:443",
     "--allow",
     "cc-lab-control-plane:6443",
     "--max-bytes-out",
     "api.anthropic.com=2000000",
     "--allow-private",
     "172.16.0.0/12",
     "--allow-private",
     "fd00::/8",
     "--sni",
     "require",
     "--audit",
     "/var/log/agentrun/audit.jsonl",
     NULL},
    {"docker", "network", "connect", "triage-net", "triage-proxy", NULL},
    {"docker",
     "run",
     "--rm",
     "-i",
     "--name",
     "triage-agent",
     "--network",
     "triage-net",
     "--read-only",
     "--tmpfs",
     "/tmp:rw,nosuid,nodev",
     "--cap-drop",
     "ALL",
     "--security-opt",
     "no-new-privileges",
     "--cgroupns",
     "private",
     "--pids-limit",
     "64",
     "--memory",
     "256m",
     "--memory-swap",
     "256m",
     "--cpus",
     "1",
     "--user",
     "1000:1000",
     "-e",
     "HTTP_PROXY=http://triage-proxy:3128",
     "-e",
     "HTTPS_PROXY=http://triage-proxy:3128",
     "-e",
     "http_proxy=http://triage-proxy:3128",
     "-e",
     "https_proxy=http://triage-proxy:3128",
     "-e",
     "NO_PROXY=localhost,127.0.0.1",
     "-e",
     "no_proxy=localhost,127.0.0.1",
     "-e",
     "AB_FIRST=x y",
     "-e",
     "ANTHROPIC_BASE_URL=https://api.anthropic.com",
     "-v",
     "/home/me/.kube/agent-config:/home/agent/.kube/config:ro",
     "-e",
     "KUBECONFIG=/home/agent/.kube/config",
     "-v",
     "/srv/logs:/logs:ro",
     "-v",
     "/srv/out:/out:rw",
     "python:3.12-alpine",
     "sh",
     "-c",
     "echo 'hi' $HOME",
     NULL},
    {"docker", "rm", "-f", "triage-agent", NULL},
    {"docker", "rm", "-f", "triage-proxy", NULL},
    {"docker", "network", "rm", "triage-net", NULL},
    {"docker", "network", "rm", "triage-egress", NULL},
    {"docker", "exec", "triage-proxy", "agentrun", "audit", "/var/log/agentrun/audit.jsonl", NULL},
};
static const char *const triage_labels[] = {
    "internal network",
    "egress network",
    "proxy",
    "connect proxy",
    "agent",
    "remove agent",
    "remove proxy",
    "remove internal network",
    "remove egress network",
    "audit",
};
static const enum ar_render_phase triage_phases[] = {
    AR_RENDER_UP,   AR_RENDER_UP,   AR_RENDER_UP,   AR_RENDER_UP,   AR_RENDER_RUN,
    AR_RENDER_DOWN, AR_RENDER_DOWN, AR_RENDER_DOWN, AR_RENDER_DOWN, AR_RENDER_AUDIT,
};

/* The docker plan of p's container spec, as render makes it. */
static int plan_build(const struct ar_policy *p, const struct ar_render_options *o,
		      struct ar_render_plan **plan, ar_error_t *err)
{
	ar_autospec struct ar_spec *sp = NULL;
	*plan = NULL;
	if (ar_spec_build_container(p, &sp, err) < 0)
		return -1;
	return ar_render_plan_build(sp, o, plan, err);
}

static struct ar_render_plan *build(const struct ar_policy *p, const struct ar_render_options *o)
{
	ar_auto_error ar_error_t err = NULL;
	struct ar_render_plan *plan = NULL;
	if (plan_build(p, o, &plan, &err) < 0)
		fail_msg("plan: %s", err->msg);
	return plan;
}

static void assert_argv(const struct ar_render_step *s, const char *const *want)
{
	size_t n = 0;
	while (want[n] != NULL)
		n++;
	for (size_t i = 0; i < n && i < s->argc; i++) {
		if (strcmp(s->argv[i], want[i]) != 0)
			fail_msg("step %s argv[%zu]: got `%s`, want `%s`", s->label, i, s->argv[i],
				 want[i]);
	}
	assert_int_equal(s->argc, n);
	assert_null(s->argv[s->argc]);
}

static void test_triage_plan(void **state)
{
	ar_autopolicy struct ar_policy *p = ar_test_policy(triage_json);
	struct ar_render_options o = {.cmd = ar_test_triage_cmd,
				      .n_cmd = AR_ARRAY_SIZE(ar_test_triage_cmd)};
	ar_autoplan struct ar_render_plan *plan = build(p, &o);

	assert_int_equal(plan->n_steps, AR_ARRAY_SIZE(triage_steps));
	for (size_t i = 0; i < plan->n_steps; i++) {
		assert_string_equal(plan->steps[i].label, triage_labels[i]);
		assert_int_equal(plan->steps[i].phase, triage_phases[i]);
		assert_argv(&plan->steps[i], triage_steps[i]);
	}
	/* the agent's image is where line wrapping stops */
	assert_string_equal(plan->steps[4].argv[plan->steps[4].nowrap_from], "python:3.12-alpine");
}

static void test_image_flags(void **state)
{
	ar_autopolicy struct ar_policy *p = ar_test_policy(triage_json);
	struct ar_render_options o = {.image = "alpine:3.20", .proxy_image = "reg/agentrun:dev"};
	ar_autoplan struct ar_render_plan *plan = build(p, &o);
	const struct ar_render_step *proxy = &plan->steps[2], *agent = &plan->steps[4];

	assert_string_equal(proxy->argv[26], "reg/agentrun:dev");
	assert_string_equal(proxy->argv[27], "proxy");
	/* no command: the image's default, so the image is the last argument */
	assert_string_equal(agent->argv[agent->argc - 1], "alpine:3.20");
	assert_int_equal(agent->nowrap_from, agent->argc - 1);
}

/* the proxy's SNI mode is always spelled out: `off` too, now that `check` is its default */
static void test_sni_modes(void **state)
{
	static const char *const modes[] = {"off", "check", "require"};
	for (size_t m = 0; m < AR_ARRAY_SIZE(modes); m++) {
		ar_autofree char *json = ar_xasprintf(
		    "{\"name\": \"s\", \"image\": \"alpine\", \"allowed_hosts\": [\"a.example\"], "
		    "\"proxy\": {\"sni\": \"%s\"}}",
		    modes[m]);
		ar_autopolicy struct ar_policy *p = ar_test_policy(json);
		struct ar_render_options o = {0};
		ar_autoplan struct ar_render_plan *plan = build(p, &o);
		const struct ar_render_step *proxy = &plan->steps[2];
		size_t i = 0;
		while (i + 1 < proxy->argc && strcmp(proxy->argv[i], "--sni") != 0)
			i++;
		assert_true(i + 1 < proxy->argc);
		assert_string_equal(proxy->argv[i + 1], modes[m]);
	}
}

static void test_missing_image(void **state)
{
	ar_autopolicy struct ar_policy *p =
	    ar_test_policy("{\"name\": \"noimg\", \"allowed_hosts\": [\"example.com\"]}");
	struct ar_render_options o = {0};
	struct ar_render_plan *plan = NULL;
	ar_auto_error ar_error_t err = NULL;

	assert_int_equal(plan_build(p, &o, &plan, &err), -1);
	assert_null(plan);
	assert_string_equal(err->msg, "p.json: `image` is not set: the docker plan needs an agent "
				      "image; set `image` in the policy or pass --image");
}

/* Images as docker's reference grammar takes them; the message names where each came
 * from (issue 13: `--proxy-image --privileged` rendered a privileged container). */
static void test_image_refs(void **state)
{
	static const char *const good[] = {
	    "python:3.12-alpine",
	    "agentrun:0.1.0",
	    "registry.example:5000/team/agent:v1",
	    "localhost/a__b/c-d--e.f:latest",
	    "busybox",
	    "a@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	    "Reg.Example/x:y"};
	static const char *const bad[] = {"--privileged", "UPPER", "a:b:c",	     ":x",  "a/",
					  "a..b",	  "-x",	   "a:-tag",	     "a b", "",
					  "a@sha256:12",  "a//b",  "reg.example:/x", "x_:1"};
	ar_autopolicy struct ar_policy *p = ar_test_policy(triage_json);
	(void)state;
	for (size_t i = 0; i < AR_ARRAY_SIZE(good); i++) {
		ar_auto_error ar_error_t err = NULL;
		if (ar_render_image_check(good[i], "--image", &err) < 0)
			fail_msg("%s refused: %s", good[i], err->msg);
	}
	for (size_t i = 0; i < AR_ARRAY_SIZE(bad); i++) {
		ar_auto_error ar_error_t err = NULL;
		if (ar_render_image_check(bad[i], "--image", &err) == 0)
			fail_msg("%s accepted", bad[i]);
	}
	static const struct {
		const char *image, *proxy_image, *json, *msg;
	} cases[] = {
	    {NULL, "--privileged", NULL,
	     "--proxy-image: \"--privileged\" is not a docker image reference"},
	    {"Alpine", NULL, NULL, "--image: \"Alpine\" is not a docker image reference"},
	    {NULL, NULL, "{\"name\": \"x\", \"image\": \"Alpine:3\", \"network\": \"none\"}",
	     "p.json: image: \"Alpine:3\" is not a docker image reference"},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(cases); i++) {
		ar_autopolicy struct ar_policy *q =
		    cases[i].json ? ar_test_policy(cases[i].json) : NULL;
		struct ar_render_options o = {.image = cases[i].image,
					      .proxy_image = cases[i].proxy_image};
		struct ar_render_plan *plan = NULL;
		ar_auto_error ar_error_t err = NULL;
		assert_int_equal(plan_build(q ? q : p, &o, &plan, &err), -1);
		assert_null(plan);
		if (strncmp(err->msg, cases[i].msg, strlen(cases[i].msg)) != 0)
			fail_msg("got [%s] want [%s...]", err->msg, cases[i].msg);
	}
}

static void test_network_none(void **state)
{
	static const char *const agent[] = {"docker",
					    "run",
					    "--rm",
					    "-i",
					    "--name",
					    "offline-agent",
					    "--network",
					    "none",
					    "--read-only",
					    "--tmpfs",
					    "/tmp:rw,nosuid,nodev",
					    "--tmpfs",
					    "/work:rw,nosuid,nodev",
					    "--cap-drop",
					    "ALL",
					    "--security-opt",
					    "no-new-privileges",
					    "--cgroupns",
					    "private",
					    "--security-opt",
					    "seccomp=/etc/agentrun/strict.json",
					    "--pids-limit",
					    "10",
					    "--memory",
					    "1g",
					    "--memory-swap",
					    "1g",
					    "--cpus",
					    "0.5",
					    "--user",
					    "1234:5678",
					    "-e",
					    "Z=1",
					    "busybox:1",
					    NULL};
	static const char *const down[] = {"docker", "rm", "-f", "offline-agent", NULL};
	ar_autopolicy struct ar_policy *p = ar_test_policy(
	    "{\"name\": \"offline\", \"image\": \"busybox:1\", \"network\": \"none\","
	    " \"tmpfs\": [\"/tmp\", \"/work\"], \"user\": \"1234:5678\", \"env\": {\"Z\": \"1\"},"
	    " \"seccomp\": \"/etc/agentrun/strict.json\","
	    " \"limits\": {\"pids\": 10, \"memory\": \"1024m\", \"cpus\": \"0.5\"}}");
	struct ar_render_options o = {0};
	ar_autoplan struct ar_render_plan *plan = build(p, &o);

	assert_int_equal(plan->n_steps, 2);
	assert_int_equal(plan->steps[0].phase, AR_RENDER_RUN);
	assert_argv(&plan->steps[0], agent);
	assert_int_equal(plan->steps[1].phase, AR_RENDER_DOWN);
	assert_argv(&plan->steps[1], down);
}

static bool has_arg_prefix(const struct ar_render_step *s, const char *prefix)
{
	for (size_t i = 0; i < s->argc; i++)
		if (strncmp(s->argv[i], prefix, strlen(prefix)) == 0)
			return true;
	return false;
}

static void test_no_kubeconfig_and_formats(void **state)
{
	ar_autopolicy struct ar_policy *p = ar_test_policy(
	    "{\"name\": \"k\", \"image\": \"i\", \"allowed_hosts\": [\"example.com\"],"
	    " \"limits\": {\"memory\": \"7340033\", \"cpus\": \"1.25\"},"
	    " \"seccomp\": \"unconfined\"}");
	struct ar_render_options o = {0};
	ar_autoplan struct ar_render_plan *plan = build(p, &o);
	const struct ar_render_step *agent = &plan->steps[4];

	assert_string_equal(agent->label, "agent");
	assert_false(has_arg_prefix(agent, "KUBECONFIG="));
	assert_false(has_arg_prefix(agent, "/home/"));
	assert_true(has_arg_prefix(agent, "seccomp=unconfined"));
	/* memory that is not a whole unit stays in bytes, cpus keep their decimals */
	assert_true(has_arg_prefix(agent, "7340033"));
	assert_true(has_arg_prefix(agent, "1.25"));
	assert_true(has_arg_prefix(agent, "HTTPS_PROXY=http://k-proxy:3128"));
}

static void test_format_parse(void **state)
{
	enum ar_render_format f = AR_RENDER_TEXT;
	assert_int_equal(ar_render_format_parse("oci", &f), 0);
	assert_int_equal(f, AR_RENDER_OCI);
	assert_int_equal(ar_render_format_parse("sh", &f), 0);
	assert_int_equal(f, AR_RENDER_SH);
	assert_int_equal(ar_render_format_parse("json", &f), 0);
	assert_int_equal(f, AR_RENDER_JSON);
	assert_int_equal(ar_render_format_parse("text", &f), 0);
	assert_int_equal(f, AR_RENDER_TEXT);
	assert_int_equal(ar_render_format_parse("yaml", &f), -1);
	assert_int_equal(ar_render_format_parse("", &f), -1);
}

/* Undo the printer's line continuations: what a shell sees after joining lines. */
static char *join_continuations(const char *text)
{
	ar_autobuf struct ar_buf b = {0};
	for (const char *c = text; *c; c++) {
		if (strncmp(c, " \\\n    ", 7) == 0) {
			ar_buf_putc(&b, ' ');
			c += 6;
			continue;
		}
		ar_buf_putc(&b, *c);
	}
	return ar_buf_steal(&b);
}

static void test_text(void **state)
{
	ar_autopolicy struct ar_policy *p = ar_test_policy(triage_json);
	struct ar_render_options o = {.cmd = ar_test_triage_cmd,
				      .n_cmd = AR_ARRAY_SIZE(ar_test_triage_cmd)};
	ar_autoplan struct ar_render_plan *plan = build(p, &o);
	ar_autobuf struct ar_buf out = {0};
	ar_render_print_text(plan, &out);

	/* transparent capture (the default) has no docker equivalent: a comment says so */
	assert_true(p->proxy.transparent);
	assert_memory_equal(out.data, "# No equivalent here of agentrun run's transparent capture",
			    58);
	const char *cmds = out.data;
	while (*cmds == '#')
		cmds = strchr(cmds, '\n') + 1;
	ar_autofree char *joined = join_continuations(cmds);
	ar_autobuf struct ar_buf want = {0};
	for (size_t i = 0; i < 5; i++) {
		for (size_t j = 0; triage_steps[i][j] != NULL; j++) {
			if (j > 0)
				ar_buf_putc(&want, ' ');
			ar_shell_quote(&want, triage_steps[i][j]);
		}
		ar_buf_putc(&want, '\n');
	}
	assert_string_equal(joined, want.data);
	assert_non_null(strstr(out.data, " --allow '*.github.com:443' "));
	assert_non_null(strstr(out.data, " sh -c 'echo '\\''hi'\\'' $HOME'\n"));
	assert_non_null(strstr(out.data, "'AB_FIRST=x y'"));
	/* lines are wrapped before options only, and stay within 80 columns before the image */
	for (const char *line = out.data; *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = (size_t)(nl - line);
		if (memmem(line, len, "python:3.12-alpine", 18) == NULL)
			assert_in_range(len, 1, 80);
		line = nl + 1;
	}
	assert_non_null(strstr(out.data, " \\\n    --"));
	assert_null(strstr(out.data, "docker rm"));
}

static void assert_json_steps(const cJSON *list, const struct ar_render_plan *plan, size_t from,
			      size_t n)
{
	static const char *const phases[] = {"up", "run", "down", "audit"};
	assert_true(cJSON_IsArray(list));
	assert_int_equal(cJSON_GetArraySize(list), n);
	for (size_t i = 0; i < n; i++) {
		const struct ar_render_step *s = &plan->steps[from + i];
		const cJSON *st = cJSON_GetArrayItem(list, (int)i);
		assert_string_equal(cJSON_GetObjectItem(st, "label")->valuestring, s->label);
		assert_string_equal(cJSON_GetObjectItem(st, "phase")->valuestring,
				    phases[s->phase]);
		const cJSON *argv = cJSON_GetObjectItem(st, "argv");
		assert_int_equal(cJSON_GetArraySize(argv), s->argc);
		for (size_t j = 0; j < s->argc; j++)
			assert_string_equal(cJSON_GetArrayItem(argv, (int)j)->valuestring,
					    s->argv[j]);
	}
}

static void test_json(void **state)
{
	ar_autopolicy struct ar_policy *p = ar_test_policy(triage_json);
	char *cmd[] = {"printf", "%s\n", "tab\there", "quote\"back\\slash", "ünï"};
	struct ar_render_options o = {.cmd = cmd, .n_cmd = AR_ARRAY_SIZE(cmd)};
	ar_autoplan struct ar_render_plan *plan = build(p, &o);
	ar_autobuf struct ar_buf out = {0};
	ar_render_print_json(plan, &out);

	cJSON *root = cJSON_Parse(out.data);
	assert_non_null(root);
	assert_json_steps(cJSON_GetObjectItem(root, "steps"), plan, 0, 5);
	assert_json_steps(cJSON_GetObjectItem(root, "down"), plan, 5, 4);
	assert_json_steps(cJSON_GetObjectItem(root, "audit"), plan, 9, 1);
	const cJSON *agent = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "steps"), 4);
	const cJSON *argv = cJSON_GetObjectItem(agent, "argv");
	assert_string_equal(cJSON_GetArrayItem(argv, cJSON_GetArraySize(argv) - 1)->valuestring,
			    "ünï");
	cJSON_Delete(root);
}

static void test_sh(void **state)
{
	ar_autopolicy struct ar_policy *p = ar_test_policy(triage_json);
	struct ar_render_options o = {.cmd = ar_test_triage_cmd,
				      .n_cmd = AR_ARRAY_SIZE(ar_test_triage_cmd)};
	ar_autoplan struct ar_render_plan *plan = build(p, &o);
	ar_autobuf struct ar_buf out = {0};
	ar_render_print_sh(p, plan, &out);

	assert_true(strncmp(out.data, "#!/bin/sh\n", 10) == 0);
	assert_non_null(strstr(out.data, "\nset -eu\n"));
	assert_non_null(strstr(out.data,
			       "\nup() {\n\tprintf '%s\\n' '+ docker network create "
			       "--internal -o com.docker.network.bridge.inhibit_ipv4=true "
			       "triage-net' >&2\n\tdocker network create --internal -o "
			       "com.docker.network.bridge.inhibit_ipv4=true triage-net\n"));
	assert_non_null(strstr(out.data, "\tdocker rm -f triage-proxy >/dev/null 2>&1 || true\n"));
	assert_non_null(strstr(out.data, "\naudit() {\n"));
	/* what docker can and cannot do about the host, said plainly */
	assert_non_null(strstr(out.data, "\n# The agent's network triage-net is --internal with "
					 "inhibit_ipv4: no outbound NAT and no\n"));
	assert_non_null(strstr(out.data, "(moby/libnetwork#1151). The proxy is also on "
					 "triage-egress and can reach them;"));
	assert_non_null(strstr(out.data, "\tdocker exec triage-proxy agentrun audit "
					 "/var/log/agentrun/audit.jsonl\n"));
	/* the echo of a quoted argument is itself quoted once more */
	assert_non_null(strstr(out.data, "--allow '\\''*.github.com:443'\\'' "));
	assert_non_null(strstr(out.data, "\ncase \"$1\" in\nup | run | down | audit) \"$1\" ;;\n"));
}

/* agentrun-secret-NAME-<32 hex> */
static bool placeholder_of(const char *name, const char *v)
{
	ar_autofree char *prefix = ar_xasprintf("agentrun-secret-%s-", name);
	size_t n = strlen(prefix);
	return strncmp(v, prefix, n) == 0 && strlen(v + n) == 32 &&
	       strspn(v + n, "0123456789abcdef") == 32;
}

/* Secrets: the values reach the proxy container only (an env: source by name, a file:
 * source as a read-only bind), the proxy gets the agent's placeholders and writes its CA
 * bundle into a volume the agent mounts read-only; the agent holds placeholders and the
 * CA variables, never a value or a source. */
static void test_secrets(void **state)
{
	ar_autopolicy struct ar_policy *p = ar_test_policy(
	    "{\"name\": \"s\", \"image\": \"i\", \"allowed_hosts\": [\"api.x.test\", "
	    "\"gh.x.test:443\"], \"proxy\": {\"upstream_ca\": \"/etc/u.pem\"},"
	    " \"secrets\": {\"K\": {\"from\": \"env:HOST_K\", \"hosts\": [\"api.x.test\"]},"
	    " \"T\": {\"from\": \"file:/run/t\", \"hosts\": [\"api.x.test\", "
	    "\"gh.x.test:443\"]}}}");
	struct ar_render_options o = {0};
	ar_autoplan struct ar_render_plan *plan = build(p, &o);
	const struct ar_render_step *proxy = &plan->steps[2], *agent = &plan->steps[4];
	assert_string_equal(proxy->label, "proxy");
	assert_string_equal(agent->label, "agent");
	ar_autofree char *pk = NULL, *pt = NULL; /* the placeholders the agent got */
	for (size_t i = 0; i < agent->argc; i++) {
		if (strncmp(agent->argv[i], "K=", 2) == 0)
			pk = ar_xstrdup(agent->argv[i] + 2);
		if (strncmp(agent->argv[i], "T=", 2) == 0)
			pt = ar_xstrdup(agent->argv[i] + 2);
		/* no source of a value reaches the agent */
		assert_null(strstr(agent->argv[i], "HOST_K"));
		assert_null(strstr(agent->argv[i], "/run/t"));
	}
	assert_non_null(pk);
	assert_non_null(pt);
	assert_true(placeholder_of("K", pk));
	assert_true(placeholder_of("T", pt));
	assert_true(has_arg_prefix(agent, "SSL_CERT_FILE=/etc/agentrun/ca-bundle.pem"));
	assert_true(has_arg_prefix(agent, "NODE_EXTRA_CA_CERTS=/etc/agentrun/ca-bundle.pem"));
	assert_true(has_arg_prefix(agent, "s-ca:/etc/agentrun:ro"));
	assert_false(has_arg_prefix(agent, "agentrun-ca-bundle.pem"));

	/* the proxy: "-e HOST_K" by name (no value), the file bound read-only */
	ar_autofree char *ph_k = ar_xasprintf("K=%s", pk);
	ar_autofree char *ph_t = ar_xasprintf("T=%s", pt);
	const char *const want[] = {"-v",
				    "s-ca:/run/agentrun/ca",
				    "-e",
				    "HOST_K",
				    "-v",
				    "/run/t:/run/agentrun/secrets/T:ro",
				    "-v",
				    "/etc/u.pem:/run/agentrun/upstream-ca.pem:ro",
				    "agentrun:" AGENTRUN_VERSION};
	size_t at = 0;
	while (at < proxy->argc && strcmp(proxy->argv[at], "--tmpfs") != 0)
		at++;
	for (size_t i = 0; i < AR_ARRAY_SIZE(want); i++)
		assert_string_equal(proxy->argv[at + 2 + i], want[i]);
	const char *const flags[] = {"--secret",
				     "K=env:HOST_K",
				     "--secret-host",
				     "K=api.x.test",
				     "--secret-placeholder",
				     ph_k,
				     "--secret",
				     "T=file:/run/agentrun/secrets/T",
				     "--secret-host",
				     "T=api.x.test",
				     "--secret-host",
				     "T=gh.x.test:443",
				     "--secret-placeholder",
				     ph_t,
				     "--upstream-ca",
				     "/run/agentrun/upstream-ca.pem",
				     "--ca-bundle",
				     "/run/agentrun/ca/ca-bundle.pem",
				     "--audit"};
	while (at < proxy->argc && strcmp(proxy->argv[at], "--sni") != 0)
		at++;
	for (size_t i = 0; i < AR_ARRAY_SIZE(flags); i++)
		assert_string_equal(proxy->argv[at + 2 + i], flags[i]);
	/* down removes the CA volume too */
	const struct ar_render_step *last_down = &plan->steps[plan->n_steps - 2];
	assert_string_equal(last_down->label, "remove CA volume");
	assert_string_equal(last_down->argv[3], "s-ca");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_triage_plan),	  cmocka_unit_test(test_image_flags),
	    cmocka_unit_test(test_missing_image), cmocka_unit_test(test_image_refs),
	    cmocka_unit_test(test_network_none),  cmocka_unit_test(test_no_kubeconfig_and_formats),
	    cmocka_unit_test(test_format_parse),  cmocka_unit_test(test_text),
	    cmocka_unit_test(test_json),	  cmocka_unit_test(test_sh),
	    cmocka_unit_test(test_sni_modes),	  cmocka_unit_test(test_secrets),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

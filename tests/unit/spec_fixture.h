/* What the unit tests of the agent spec and its readers (tests/unit/spec, render,
 * check's bundle test) share: cmocka's includes, a policy parsed from a JSON string
 * (origin "p.json"), its spec, and DESIGN §3's triage example. Header-only, included as
 * "../spec_fixture.h" like need.h. */
#ifndef AGENTRUN_TEST_SPEC_FIXTURE_H
#define AGENTRUN_TEST_SPEC_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agentrun/policy.h"
#include "agentrun/spec.h"
#include "agentrun/util.h"

/* DESIGN §3's example, with a second env key to pin the sort; PROXY_MORE: more members
 * of its "proxy" object (", \"allow_private\": [...]"). */
#define AR_TEST_TRIAGE_JSON(PROXY_MORE)                                                            \
	"{\"name\": \"triage\", \"image\": \"python:3.12-alpine\", \"rootfs\": null,"              \
	" \"allowed_hosts\": [\"api.anthropic.com\", \"*.github.com:443\","                        \
	" \"cc-lab-control-plane:6443\"],"                                                         \
	" \"kubeconfig\": \"/home/me/.kube/agent-config\","                                        \
	" \"mounts\": [{\"source\": \"/srv/logs\", \"target\": \"/logs\", \"readonly\": true},"    \
	" {\"source\": \"/srv/out\", \"target\": \"/out\", \"readonly\": false}],"                 \
	" \"tmpfs\": [\"/tmp\"], \"limits\": {\"pids\": 64, \"memory\": \"256m\", \"cpus\": "      \
	"\"1\"},"                                                                                  \
	" \"user\": \"1000\","                                                                     \
	" \"env\": {\"ANTHROPIC_BASE_URL\": \"https://api.anthropic.com\", \"AB_FIRST\": \"x "     \
	"y\"},"                                                                                    \
	" \"seccomp\": \"default\", \"network\": \"proxy\","                                       \
	" \"proxy\": {\"port\": 3128, \"max_bytes_out\": {\"api.anthropic.com\": 2000000},"        \
	" \"sni\": \"require\"" PROXY_MORE "}}"

/* A policy with two tmpfs, two mounts, a kubeconfig and the proxy: the spec tests' own. */
#define AR_TEST_SPEC_JSON                                                                          \
	"{\"name\": \"triage\", \"allowed_hosts\": [\"api.anthropic.com\"],"                       \
	" \"kubeconfig\": \"/home/me/.kube/agent-config\","                                        \
	" \"mounts\": [{\"source\": \"/srv/logs\", \"target\": \"/logs\", \"readonly\": true},"    \
	" {\"source\": \"/srv/out\", \"target\": \"/out\", \"readonly\": false}],"                 \
	" \"tmpfs\": [\"/tmp\", \"/work\"], \"limits\": {\"pids\": 32, \"memory\": \"1g\","        \
	" \"cpus\": \"0.5\"}, \"user\": \"1000:1001\", \"env\": {\"B\": \"2\", \"A\": \"1\"},"     \
	" \"network\": \"proxy\", \"proxy\": {\"port\": 8080}}"

static char *const ar_test_triage_cmd[] = {"sh", "-c", "echo 'hi' $HOME"};

/* The policy of json (origin "p.json"); the test fails with the reader's error. */
static inline struct ar_policy *ar_test_policy(const char *json)
{
	ar_auto_error ar_error_t err = NULL;
	struct ar_policy *p = NULL;
	if (ar_policy_parse(json, strlen(json), "p.json", &p, &err) < 0)
		fail_msg("policy: %s", err->msg);
	return p;
}

/* The spec of p (o may be NULL); the test fails with its error. */
static inline struct ar_spec *ar_test_spec(const struct ar_policy *p, const struct ar_spec_opts *o)
{
	ar_auto_error ar_error_t err = NULL;
	struct ar_spec *s = NULL;
	if (ar_spec_build(p, o, &s, &err) < 0)
		fail_msg("spec: %s", err->msg);
	return s;
}

#endif

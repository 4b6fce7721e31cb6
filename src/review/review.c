/* The review (docs/review.md): the table of finding kinds, the host table built from
 * an audit, and the checks on the allow-list: write channels, wildcards over platforms
 * where anyone can publish, paste hosts, rules the run never used. The policy's other
 * checks are in policy.c, the kubeconfig's in kubeconfig.c, the outputs in format.c. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/jsonspan.h"
#include "agentrun/review.h"
#include "agentrun/rules.h"
#include "internal.h"

const struct review_kind review_kinds[] = {
    {"wildcard-any", AR_SEV_CRITICAL, "the allow-list lets the agent reach every host"},
    {"shared-platform-wildcard", AR_SEV_HIGH,
     "a wildcard over a platform where anyone can publish"},
    {"paste-host", AR_SEV_MEDIUM, "a paste or file-drop host: anyone can read what is put there"},
    {"write-channel", AR_SEV_MEDIUM,
     "a host that received request bodies or more than the write threshold"},
    {"rule-unused", AR_SEV_LOW, "a rule that allowed nothing in the observed run"},
    {"secret-in-env", AR_SEV_HIGH, "a credential passed in env: the agent holds it"},
    {"secret-wildcard-host", AR_SEV_MEDIUM,
     "a secret bound to a wildcard: its value goes to every name under it"},
    {"kubeconfig-long-lived-token", AR_SEV_HIGH, "a kubeconfig token that lives over an hour"},
    {"kubeconfig-rbac", AR_SEV_LOW, "whether the kubeconfig's user may write: for a human"},
    {"kubeconfig-unreadable", AR_SEV_MEDIUM, "the kubeconfig could not be reviewed"},
    {"mount-home-rw", AR_SEV_HIGH, "the home directory (or above it) mounted read-write"},
    {"mount-git-writable", AR_SEV_HIGH, "a repository mounted with its .git writable"},
    {"mount-docker-socket", AR_SEV_CRITICAL, "a container runtime's socket mounted"},
    {"mount-run-dir", AR_SEV_HIGH, "/run or /var/run mounted: the host's sockets"},
    {"mount-ssh-agent", AR_SEV_HIGH, "an SSH agent socket mounted"},
    {"mount-credentials", AR_SEV_HIGH, "a credential directory mounted"},
    {"limits-absent", AR_SEV_LOW, "a limit not set: the default applies"},
    {"limits-above-default", AR_SEV_MEDIUM, "a limit above the documented default"},
    {"drift", AR_SEV_HIGH, "the running target differs from the policy"},
};
const size_t review_n_kinds = sizeof(review_kinds) / sizeof(review_kinds[0]);

static const char *const severities[] = {"info", "low", "medium", "high", "critical"};

int ar_severity_parse(const char *s)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(severities); i++)
		if (strcmp(s, severities[i]) == 0)
			return (int)i;
	return -1;
}

const char *ar_severity_name(enum ar_severity s)
{
	return (size_t)s < AR_ARRAY_SIZE(severities) ? severities[s] : "unknown";
}

const struct review_kind *review_kind(const char *id)
{
	for (size_t i = 0; i < review_n_kinds; i++)
		if (strcmp(review_kinds[i].id, id) == 0)
			return &review_kinds[i];
	return NULL;
}

void review_add(struct ar_review *r, const char *id, const char *key, const char *fix,
		const char *fmt, ...)
{
	va_list ap;
	const struct review_kind *k = review_kind(id);
	r->f = ar_xrealloc(r->f, (r->n + 1) * sizeof(*r->f));
	struct ar_review_finding *f = &r->f[r->n++];
	*f = (struct ar_review_finding){.id = k ? k->id : "unknown",
					.severity = k ? k->severity : AR_SEV_INFO,
					.fix = ar_xstrdup(fix),
					.key = ar_xstrdup(key ? key : ""),
					.line = 1};
	va_start(ap, fmt);
	if (vasprintf(&f->evidence, fmt, ap) == -1)
		f->evidence = ar_xstrdup("(out of memory)");
	va_end(ap);
}

size_t ar_review_count(const struct ar_review *r, enum ar_severity sev)
{
	size_t n = 0;
	for (size_t i = 0; i < r->n; i++)
		n += r->f[i].severity >= sev;
	return n;
}

void ar_review_free(struct ar_review *r)
{
	for (size_t i = 0; i < r->n_hosts; i++) {
		free(r->hosts[i].rule);
		free(r->hosts[i].methods);
		ar_strv_free(r->hosts[i].names);
	}
	free(r->hosts);
	for (size_t i = 0; i < r->n; i++) {
		free(r->f[i].evidence);
		free(r->f[i].fix);
		free(r->f[i].key);
	}
	free(r->f);
	memset(r, 0, sizeof(*r));
}

/* Each finding's line in the policy file, from its key. */
static void place(struct ar_review *r, const char *text, size_t len)
{
	for (size_t i = 0; text != NULL && i < r->n; i++) {
		bool exact;
		long off = json_locate(text, len, r->f[i].key, &exact);
		if (off >= 0)
			r->f[i].line = json_line_of(text, len, off);
	}
}

void ar_review_run(const struct ar_review_input *in, struct ar_review *out)
{
	memset(out, 0, sizeof(*out));
	out->have_audit = in->audit != NULL;
	out->policy_path = in->policy_path;
	out->target = in->target;
	review_hosts(in, out);
	review_rules(in, out);
	review_secrets(in, out);
	if (in->p->kubeconfig != NULL && in->kubeconfig_text != NULL)
		ar_review_kubeconfig(in->kubeconfig_text, in->kubeconfig_len, in->p->kubeconfig,
				     in->now, out);
	else if (in->p->kubeconfig != NULL)
		review_add(out, "kubeconfig-unreadable", "kubeconfig",
			   "make the file readable to the reviewer, or review it by hand",
			   "kubeconfig %s: %s", in->p->kubeconfig,
			   in->kubeconfig_error ? in->kubeconfig_error : "not read");
	review_mounts(in, out);
	review_limits(in, out);
	for (size_t i = 0; in->drift != NULL && i < in->drift->n; i++) {
		const struct ar_finding *d = &in->drift->v[i];
		review_add(out, "drift", "", d->fix, "%s: %s expected %s actual %s",
			   in->target ? in->target : "target", d->what, d->expected, d->actual);
	}
	place(out, in->policy_text, in->policy_len);
}

/* agentrun review (docs/review.md): a policy reviewed before an agent goes live, with
 * evidence: per allowed host what the observed run did with it (an audit), write
 * channels, wildcards over platforms where anyone can publish, credentials the agent
 * would hold, dangerous mounts, limits, and drift of a running target (check's own
 * findings). Each finding has an id, a severity, the evidence, the fix and the place in
 * the policy file it is about. The checks are pure over their inputs (the caller reads
 * the files); text, JSON and SARIF 2.1.0 out. */
#ifndef AGENTRUN_REVIEW_H
#define AGENTRUN_REVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agentrun/audit.h"
#include "agentrun/check.h"
#include "agentrun/error.h"
#include "agentrun/policy.h"
#include "agentrun/propose.h"
#include "agentrun/util.h"

enum ar_severity {
	AR_SEV_INFO,
	AR_SEV_LOW,
	AR_SEV_MEDIUM,
	AR_SEV_HIGH,
	AR_SEV_CRITICAL,
};
/* "info" ... "critical"; -1 for another word. */
int ar_severity_parse(const char *s);
const char *ar_severity_name(enum ar_severity s);

#define AR_REVIEW_WRITE_KIB 64	 /* bytes out past which a host is a write channel */
#define AR_REVIEW_TOKEN_MAX 3600 /* seconds a kubeconfig token may live */

struct ar_review_finding {
	const char *id; /* "write-channel", ... (the table in review.c) */
	enum ar_severity severity;
	char *evidence;
	char *fix;
	char *key; /* the policy field it is about: "allowed_hosts[2]", "env.X", "" */
	int line;  /* in the policy file, from key (1 when unknown) */
};

/* One allowed_hosts rule and what the run did through it. */
struct ar_review_host {
	char *rule;
	size_t index; /* in allowed_hosts */
	uint64_t requests, bytes_out, bytes_in, bodies, largest_body;
	char *methods; /* "GET,POST", sorted */
	char **names;  /* the distinct hosts it allowed, sorted */
	size_t n_names;
	const char *verdict; /* "write channel", "read", "unused", "no audit" */
};

struct ar_review_input {
	const struct ar_policy *p;
	const char *policy_path;
	const char *policy_text; /* the file, for the lines of findings */
	size_t policy_len;
	const struct ar_audit_entries *audit; /* or NULL */
	const struct ar_psl *psl;	      /* or NULL: only the platform list */
	const char *home;		      /* the caller's $HOME, or NULL */
	const char *ssh_auth_sock;	      /* $SSH_AUTH_SOCK, or NULL */
	const char *kubeconfig_text;	      /* the policy's kubeconfig, read, or NULL */
	size_t kubeconfig_len;
	const char *kubeconfig_error;	 /* why it could not be read, or NULL */
	int64_t now;			 /* seconds since the epoch (token lifetimes) */
	uint64_t write_kib;		 /* 0: AR_REVIEW_WRITE_KIB */
	const struct ar_findings *drift; /* check's findings for the target, or NULL */
	const char *target;		 /* what drift is about */
};

struct ar_review {
	struct ar_review_host *hosts;
	size_t n_hosts;
	struct ar_review_finding *f;
	size_t n;
	bool have_audit;
	const char *policy_path;
	const char *target;
};

void ar_review_run(const struct ar_review_input *in, struct ar_review *out);
void ar_review_free(struct ar_review *r);
/* Findings at or above sev. */
size_t ar_review_count(const struct ar_review *r, enum ar_severity sev);

/* The kubeconfig findings alone (kubeconfig.c; the review fuzz target's entry):
 * tokens living longer than AR_REVIEW_TOKEN_MAX (the JWT's exp, or no expiry at all)
 * and the RBAC question for a human. */
void ar_review_kubeconfig(const char *text, size_t len, const char *path, int64_t now,
			  struct ar_review *out);
/* The payload of a JWT ("h.p.s", base64url), NUL-terminated; NULL when it is not one. */
char *ar_jwt_payload(const char *token);

/* Outputs. */
void ar_review_format_text(const struct ar_review *r, struct ar_buf *out);
void ar_review_format_json(const struct ar_review *r, struct ar_buf *out);
void ar_review_format_sarif(const struct ar_review *r, struct ar_buf *out);

/* Internal to src/review: add a finding (takes evidence and fix, printf'd). */
void review_add(struct ar_review *r, const char *id, const char *key, const char *fix,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#endif

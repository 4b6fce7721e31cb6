/* The kubeconfig the policy hands the agent (docs/review.md): a bearer token that lives
 * longer than an hour is a finding (the JWT's exp, against its iat or now; a token
 * without exp, or that is no JWT at all, lives until someone revokes it), and so is
 * the question agentrun cannot answer offline, whether the user may write, which is
 * printed for a human with the command that answers it. The file is read with the
 * manifest reader `check` uses (YAML or JSON). */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/k8s.h"
#include "agentrun/review.h"

static int b64url_value(char c)
{
	static const char alphabet[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	const char *p = c ? strchr(alphabet, c) : NULL;
	return p ? (int)(p - alphabet) : -1;
}

char *ar_jwt_payload(const char *token)
{
	const char *a = strchr(token, '.');
	const char *b = a ? strchr(a + 1, '.') : NULL;
	if (a == NULL || b == NULL || b == a + 1 || strchr(b + 1, '.') != NULL)
		return NULL;
	size_t n = (size_t)(b - a - 1);
	char *out = ar_xcalloc(n + 1, 1);
	size_t k = 0;
	uint32_t acc = 0;
	int bits = 0;
	for (const char *p = a + 1; p < b; p++) {
		int v = b64url_value(*p);
		if (v < 0 && *p == '=')
			break; /* padding, which base64url leaves out but some writers keep */
		if (v < 0) {
			free(out);
			return NULL;
		}
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[k++] = (char)((acc >> bits) & 0xff);
		}
	}
	if (memchr(out, '\0', k) != NULL) {
		free(out);
		return NULL;
	}
	return out;
}

static double number(const cJSON *o, const char *key, bool *have)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	*have = cJSON_IsNumber(v) && v->valuedouble > 0 && v->valuedouble < 1e13;
	return *have ? v->valuedouble : 0;
}

/* How long the token lives, in seconds (-1: no expiry), or -2 when it is no JWT. */
static double token_life(const char *token, int64_t now, double *exp_out)
{
	ar_autofree char *payload = ar_jwt_payload(token);
	if (payload == NULL)
		return -2;
	cJSON *claims = cJSON_Parse(payload);
	bool have_exp, have_iat;
	double exp = number(claims, "exp", &have_exp), iat = number(claims, "iat", &have_iat);
	bool object = cJSON_IsObject(claims);
	cJSON_Delete(claims);
	if (!object)
		return -2;
	*exp_out = exp;
	if (!have_exp)
		return -1;
	return exp - (have_iat ? iat : (double)now);
}

static void check_token(const char *user, const char *token, const char *path, int64_t now,
			struct ar_review *out)
{
	static const char fix[] = "mint a token that dies within the hour: kubectl create token "
				  "SERVICEACCOUNT --duration=1h (docs/runbook.md, step 2)";
	double exp = 0, life = token_life(token, now, &exp);
	if (life == -2)
		review_add(out, "kubeconfig-long-lived-token", "kubeconfig", fix,
			   "kubeconfig %s: user %s has a static bearer token (not a JWT): it lives "
			   "until someone revokes it",
			   path, user);
	else if (life == -1)
		review_add(out, "kubeconfig-long-lived-token", "kubeconfig", fix,
			   "kubeconfig %s: user %s has a token without exp: it never expires", path,
			   user);
	else if (life > AR_REVIEW_TOKEN_MAX)
		review_add(out, "kubeconfig-long-lived-token", "kubeconfig", fix,
			   "kubeconfig %s: user %s has a token that lives %.0f s (over %d s; exp "
			   "%.0f)",
			   path, user, life, AR_REVIEW_TOKEN_MAX, exp);
}

void ar_review_kubeconfig(const char *text, size_t len, const char *path, int64_t now,
			  struct ar_review *out)
{
	ar_auto_error ar_error_t err = NULL;
	cJSON *docs = ar_k8s_read_manifest(text, len, path, &err);
	const cJSON *cfg = cJSON_GetArrayItem(docs, 0);
	const cJSON *users = cJSON_GetObjectItemCaseSensitive(cfg, "users");
	if (!cJSON_IsArray(users)) {
		review_add(out, "kubeconfig-unreadable", "kubeconfig",
			   "give a kubeconfig (kubectl config view --minify --raw)",
			   "kubeconfig %s: %s", path,
			   err ? err->msg : "no users: not a kubeconfig");
		cJSON_Delete(docs);
		return;
	}
	const cJSON *u;
	cJSON_ArrayForEach(u, users)
	{
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(u, "name");
		const cJSON *user = cJSON_GetObjectItemCaseSensitive(u, "user");
		const cJSON *token = cJSON_GetObjectItemCaseSensitive(user, "token");
		const char *who = cJSON_IsString(name) ? name->valuestring : "(unnamed)";
		if (cJSON_IsString(token))
			check_token(who, token->valuestring, path, now, out);
		ar_autofree char *fix =
		    ar_xasprintf("run `kubectl --kubeconfig %s --user %s auth can-i --list` and "
				 "keep only get, list and watch (a read-only role such as view)",
				 path, who);
		review_add(out, "kubeconfig-rbac", "kubeconfig", fix,
			   "kubeconfig %s: whether user %s may create, update, patch or delete is "
			   "decided by the cluster's RBAC, which agentrun does not ask",
			   path, who);
	}
	cJSON_Delete(docs);
}

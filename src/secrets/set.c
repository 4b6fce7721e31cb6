/* The set of a run's secrets: placeholders made by agentrun, values read by the
 * proxy process into a vault of their own (locked, out of core dumps, wiped at the
 * end), and which secrets a host may receive. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentrun/secrets.h"

static int serr(ar_error_t *err, int e, const struct ar_secrets *s, const struct ar_secret *x,
		const char *what)
{
	return ar_error_make(err, e, "%s: secrets.%s.from: %s %s", s->origin, x->name, x->from,
			     what);
}

static int placeholder(struct ar_secret *x, ar_error_t *err)
{
	unsigned char r[AR_SECRET_HEX / 2];
	size_t got = 0;
	while (got < sizeof(r)) {
		ssize_t n = getrandom(r + got, sizeof(r) - got, 0);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return ar_error_make(err, errno, "secrets: getrandom");
		got += (size_t)n;
	}
	int len = snprintf(x->placeholder, sizeof(x->placeholder), AR_SECRET_PREFIX "%s-", x->name);
	for (size_t i = 0; i < sizeof(r); i++)
		len += snprintf(x->placeholder + len, sizeof(x->placeholder) - (size_t)len, "%02x",
				r[i]);
	x->plen = (size_t)len;
	return 0;
}

int ar_secrets_new_specs(const struct ar_secret_spec *specs, size_t n, const char *origin,
			 struct ar_secrets **out, ar_error_t *err)
{
	*out = NULL;
	if (n == 0)
		return 0;
	ar_autosecrets struct ar_secrets *s = ar_xcalloc(1, sizeof(*s));
	s->origin = ar_xstrdup(origin);
	s->s = ar_xcalloc(n, sizeof(*s->s));
	for (size_t i = 0; i < n; i++, s->n++) {
		struct ar_secret *x = &s->s[i];
		x->name = ar_xstrdup(specs[i].name);
		x->from = ar_xstrdup(specs[i].from);
		x->in_env = true;
		ar_autofree char *what = ar_xasprintf("%s: secrets.%s.hosts", s->origin, x->name);
		if (ar_rules_compile(specs[i].hosts, specs[i].n_hosts, what, &x->hosts, err) ==
			-1 ||
		    placeholder(x, err) == -1)
			return -1;
	}
	*out = steal_pointer(&s);
	return 0;
}

int ar_secrets_new(const struct ar_policy *p, struct ar_secrets **out, ar_error_t *err)
{
	return ar_secrets_new_specs(p->secrets, p->n_secrets, p->origin ? p->origin : "<policy>",
				    out, err);
}

int ar_secrets_add_kubeconfig(struct ar_secrets **sp, const struct ar_policy *p,
			      const struct ar_kubeconfig *k, ar_error_t *err)
{
	if (*sp == NULL) {
		*sp = ar_xcalloc(1, sizeof(**sp));
		(*sp)->origin = ar_xstrdup(p->origin ? p->origin : "<policy>");
	}
	struct ar_secrets *s = *sp;
	s->s = ar_xrealloc(s->s, (s->n + 1) * sizeof(*s->s));
	struct ar_secret *x = &s->s[s->n];
	*x = (struct ar_secret){.name = ar_xstrdup(AR_KUBECONFIG_SECRET),
				.from = ar_xasprintf("kubeconfig:%s", p->kubeconfig)};
	s->n++;
	char *rule = k->rule;
	ar_autofree char *what = ar_xasprintf("%s: kubeconfig server", s->origin);
	if (ar_rules_compile(&rule, 1, what, &x->hosts, err) == -1)
		return -1;
	return placeholder(x, err);
}

int ar_secrets_kubeconfig(struct ar_secrets **sp, const struct ar_policy *p,
			  struct ar_kubeconfig *k, ar_error_t *err)
{
	if (p->kubeconfig == NULL || p->network != AR_NETWORK_PROXY)
		return 0;
	if (ar_kubeconfig_load(p->kubeconfig, k, err) == -1)
		return ar_error_wrap(err, "%s: kubeconfig", p->origin);
	explicit_bzero(k->token, strlen(k->token)); /* the proxy reads it again itself */
	ar_autorules struct ar_rules *allowed = NULL;
	struct ar_host h;
	struct ar_decision d;
	if (ar_rules_compile(p->allowed_hosts, p->n_allowed_hosts, "allowed_hosts", &allowed,
			     err) == -1 ||
	    ar_host_canonicalize(k->host, &h, err) == -1)
		return -1;
	ar_rules_decide(allowed, &h, k->port, &d);
	if (!d.allowed)
		return ar_error_make(err, 0,
				     "%s: kubeconfig: its server %s is not in allowed_hosts (add "
				     "\"%s\")",
				     p->origin, k->rule, k->rule);
	return ar_secrets_add_kubeconfig(sp, p, k, err);
}

int ar_secrets_adopt(struct ar_secrets *s, char *const *env, const char *origin, ar_error_t *err)
{
	for (size_t i = 0; s != NULL && i < s->n; i++) {
		struct ar_secret *x = &s->s[i];
		size_t n = strlen(x->name);
		const char *v = NULL;
		for (size_t k = 0; x->in_env && env && env[k]; k++)
			if (strncmp(env[k], x->name, n) == 0 && env[k][n] == '=')
				v = env[k] + n + 1;
		if (!x->in_env)
			continue;
		if (v == NULL || strncmp(v, AR_SECRET_PREFIX, AR_SECRET_PREFIX_LEN) != 0 ||
		    strncmp(v + AR_SECRET_PREFIX_LEN, x->name, n) != 0 ||
		    v[AR_SECRET_PREFIX_LEN + n] != '-' ||
		    strlen(v + AR_SECRET_PREFIX_LEN + n + 1) != AR_SECRET_HEX ||
		    strspn(v + AR_SECRET_PREFIX_LEN + n + 1, "0123456789abcdef") != AR_SECRET_HEX)
			return ar_error_make(err, 0,
					     "%s: secrets.%s: the environment holds no placeholder "
					     "for it (agentrun render writes one)",
					     origin, x->name);
		snprintf(x->placeholder, sizeof(x->placeholder), "%s", v);
		x->plen = strlen(v);
	}
	return 0;
}

/* kubeconfig:PATH: the current context's token; its cluster's CA kept for the proxy. */
static int read_kubeconfig(struct ar_secrets *s, const struct ar_secret *x, char *buf, size_t size,
			   size_t *len, ar_error_t *err)
{
	struct ar_kubeconfig k;
	if (ar_kubeconfig_load(x->from + 11, &k, err) == -1)
		return -1;
	int r = 0;
	*len = strlen(k.token);
	if (*len >= size)
		r = serr(err, 0, s, x, "holds a token longer than 64 KiB");
	else
		memcpy(buf, k.token, *len);
	if (r == 0 && k.ca_pem != NULL && s->upstream_ca_pem == NULL)
		s->upstream_ca_pem = ar_xstrdup(k.ca_pem);
	ar_kubeconfig_free(&k);
	return r;
}

/* Read one source: the value, or the reason it cannot be one. */
static int read_source(struct ar_secrets *s, const struct ar_secret *x, char *buf, size_t size,
		       size_t *len, ar_error_t *err)
{
	if (strncmp(x->from, "kubeconfig:", 11) == 0)
		return read_kubeconfig(s, x, buf, size, len, err);
	if (strncmp(x->from, "env:", 4) == 0) {
		const char *v = getenv(x->from + 4);
		if (v == NULL || v[0] == '\0')
			return serr(err, 0, s, x, "is not set or empty");
		if (strlen(v) >= size)
			return serr(err, 0, s, x, "is longer than 64 KiB");
		*len = strlen(v);
		memcpy(buf, v, *len);
		return 0;
	}
	ar_autoclose int fd = open(x->from + 5, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	if (fd == -1 || fstat(fd, &st) == -1)
		return serr(err, errno, s, x, "cannot be read");
	if (!S_ISREG(st.st_mode))
		return serr(err, 0, s, x, "is not a regular file");
	ssize_t n = TEMP_FAILURE_RETRY(read(fd, buf, size));
	if (n == -1)
		return serr(err, errno, s, x, "cannot be read");
	if ((size_t)n == size)
		return serr(err, 0, s, x, "is longer than 64 KiB");
	*len = (size_t)n;
	if (*len > 0 && buf[*len - 1] == '\n')
		(*len)--; /* `echo TOKEN > file` */
	if (*len > 0 && buf[*len - 1] == '\r')
		(*len)--;
	if (*len == 0)
		return serr(err, 0, s, x, "is empty");
	return 0;
}

static int check_value(const struct ar_secrets *s, const struct ar_secret *x, const char *v,
		       size_t len, ar_error_t *err)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
			return serr(err, 0, s, x,
				    "holds a control character (a value goes into header lines)");
	return 0;
}

int ar_secrets_check_sources(struct ar_secrets *s, ar_error_t *err)
{
	if (s == NULL)
		return 0;
	char *buf = malloc(AR_SECRET_VALUE_MAX);
	int r = 0;
	for (size_t i = 0; r == 0 && i < s->n; i++) {
		size_t len = 0;
		r = read_source(s, &s->s[i], buf, AR_SECRET_VALUE_MAX, &len, err);
		if (r == 0)
			r = check_value(s, &s->s[i], buf, len, err);
		explicit_bzero(buf, AR_SECRET_VALUE_MAX);
	}
	free(buf);
	return r;
}

/* The vault: one mapping for every value, locked (no swap) when the limit allows,
 * never in a core dump. */
static int vault_open(struct ar_secrets *s, ar_error_t *err)
{
	s->vault_len = (s->n * AR_SECRET_VALUE_MAX + 4095) & ~(size_t)4095;
	s->vault =
	    mmap(NULL, s->vault_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->vault == MAP_FAILED) {
		s->vault = NULL;
		return ar_error_make(err, errno, "secrets: mmap");
	}
	if (madvise(s->vault, s->vault_len, MADV_DONTDUMP) == -1)
		return ar_error_make(err, errno, "secrets: madvise MADV_DONTDUMP");
	if (mlock(s->vault, s->vault_len) == -1) {
		/* RLIMIT_MEMLOCK: the values may be swapped; still never dumped */
	}
	return 0;
}

int ar_secrets_load(struct ar_secrets *s, ar_error_t *err)
{
	if (s == NULL || s->vault != NULL)
		return 0;
	if (vault_open(s, err) == -1)
		return -1;
	for (size_t i = 0; i < s->n; i++) {
		struct ar_secret *x = &s->s[i];
		char *slot = s->vault + i * AR_SECRET_VALUE_MAX;
		size_t len = 0;
		if (read_source(s, x, slot, AR_SECRET_VALUE_MAX, &len, err) == -1 ||
		    check_value(s, x, slot, len, err) == -1)
			return -1;
		slot[len] = '\0';
		x->value = slot;
		x->vlen = len;
	}
	/* an env: value stays in this process's environment block (a fork shares the
	 * parent's, which /proc/PID/environ shows): wiped there, the vault has it */
	for (size_t i = 0; i < s->n; i++) {
		char *v = strncmp(s->s[i].from, "env:", 4) == 0 ? getenv(s->s[i].from + 4) : NULL;
		if (v != NULL)
			explicit_bzero(v, strlen(v));
	}
	return 0;
}

void ar_secrets_free(struct ar_secrets *s)
{
	if (s == NULL)
		return;
	if (s->vault != NULL) {
		explicit_bzero(s->vault, s->vault_len);
		munmap(s->vault, s->vault_len);
	}
	for (size_t i = 0; i < s->n; i++) {
		free(s->s[i].name);
		free(s->s[i].from);
		ar_rules_free(s->s[i].hosts);
	}
	free(s->s);
	free(s->origin);
	free(s->upstream_ca_pem);
	free(s);
}

void ar_cleanup_secretsp(struct ar_secrets **s)
{
	ar_secrets_free(*s);
	*s = NULL;
}

uint64_t ar_secrets_bound(const struct ar_secrets *s, const struct ar_host *host, int port)
{
	uint64_t mask = 0;
	for (size_t i = 0; s != NULL && i < s->n; i++) {
		struct ar_decision d;
		ar_rules_decide(s->s[i].hosts, host, port, &d);
		if (d.allowed)
			mask |= 1ULL << i;
	}
	return mask;
}

void ar_secrets_names(const struct ar_secrets *s, uint64_t mask, char *out, size_t size)
{
	size_t len = 0;
	out[0] = '\0';
	for (size_t i = 0; s != NULL && i < s->n && len + 1 < size; i++)
		if (mask & (1ULL << i))
			len += (size_t)snprintf(out + len, size - len, "%s%s", len ? "," : "",
						s->s[i].name);
}

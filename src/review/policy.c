/* The policy's own risks, whatever the run did: credentials the agent would hold in
 * its environment, mounts that hand it the host (a writable home or .git, a container
 * runtime's socket, /run, an SSH agent, a credential directory) and limits left at
 * their defaults or raised above them. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agentrun/jsonspan.h"
#include "agentrun/check.h"
#include "agentrun/review.h"
#include "internal.h"

/* A secret's value reaches every host its rules cover: a wildcard (or "*") hands it
 * to names nobody reviewed. */
static void secret_hosts(const struct ar_policy *p, struct ar_review *out)
{
	for (size_t i = 0; i < p->n_secrets; i++) {
		const struct ar_secret_spec *s = &p->secrets[i];
		for (size_t k = 0; k < s->n_hosts; k++) {
			char key[AR_POLICY_SECRET_NAME_MAX + 48];
			if (s->hosts[k][0] != '*')
				continue;
			snprintf(key, sizeof(key), "secrets.%s.hosts[%zu]", s->name, k);
			review_add(out, "secret-wildcard-host", key,
				   "bind the secret to the exact hosts that take it",
				   "secret %s is added to requests to every host rule %s covers",
				   s->name, s->hosts[k]);
		}
	}
}

/* Credentials belong in `secrets` (docs/secrets.md: the agent holds a placeholder, the
 * proxy adds the value toward the secret's hosts); a credential-looking variable in
 * env is one the agent holds. The policy refuses a name in both. */
void review_secrets(const struct ar_review_input *in, struct ar_review *out)
{
	const struct ar_policy *p = in->p;
	secret_hosts(p, out);
	for (size_t i = 0; i < p->n_env; i++) {
		const struct ar_env *e = &p->env[i];
		char key[AR_POLICY_NAME_MAX + 256];
		if (!ar_check_is_secret_name(e->key) && !ar_check_is_secret_value(e->value))
			continue;
		snprintf(key, sizeof(key), "env.%.250s", e->key);
		review_add(out, "secret-in-env", key,
			   "move it from env to the policy's `secrets` ({\"NAME\": {\"from\": "
			   "\"env:NAME\", \"hosts\": [\"api.example.com\"]}}: the agent gets a "
			   "placeholder, the proxy adds the value only toward those hosts; "
			   "docs/secrets.md), or mount a short-lived credential read-only",
			   "env %s %s: the agent, and anything that injects it, holds the "
			   "credential (value not shown)",
			   e->key,
			   ar_check_is_secret_value(e->value) ? "holds a credential-shaped value"
							      : "has a credential's name");
	}
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static bool is_runtime_socket(const char *src)
{
	static const char *const sockets[] = {
	    "docker.sock",    "podman.sock",	  "containerd.sock", "crio.sock",
	    "buildkitd.sock", "cri-dockerd.sock", "dockershim.sock", "k3s.sock"};
	for (size_t i = 0; i < AR_ARRAY_SIZE(sockets); i++)
		if (strcmp(base_name(src), sockets[i]) == 0)
			return true;
	return false;
}

static bool is_ssh_agent(const char *src, const char *auth_sock)
{
	const char *b = base_name(src);
	return (auth_sock != NULL && *auth_sock && strcmp(src, auth_sock) == 0) ||
	       (strncmp(b, "agent.", 6) == 0 && strstr(src, "/ssh-") != NULL) ||
	       strcmp(b, "S.gpg-agent.ssh") == 0 || strstr(b, "ssh-agent") != NULL;
}

/* src is home, above it, or a place every home lives in. */
static bool covers_home(const char *src, const char *home)
{
	size_t n = strlen(src);
	if (strcmp(src, "/") == 0 || strcmp(src, "/home") == 0 || strcmp(src, "/root") == 0)
		return true;
	return home != NULL && *home && strncmp(home, src, n) == 0 &&
	       (home[n] == '\0' || home[n] == '/');
}

/* Does a later read-only mount cover TARGET/.git? */
static bool git_covered(const struct ar_policy *p, size_t i)
{
	ar_autofree char *git = ar_xasprintf("%s/.git", p->mounts[i].target);
	for (size_t k = i + 1; k < p->n_mounts; k++)
		if (p->mounts[k].readonly && strcmp(p->mounts[k].target, git) == 0)
			return true;
	return false;
}

static void one_mount(const struct ar_review_input *in, size_t i, struct ar_review *out)
{
	const struct ar_mount *m = &in->p->mounts[i];
	const char *src = m->source;
	char key[32];
	struct stat st;
	snprintf(key, sizeof(key), "mounts[%zu]", i);
	if (is_runtime_socket(src))
		review_add(out, "mount-docker-socket", key, "remove the mount",
			   "%s is a container runtime's socket: whoever reaches it runs "
			   "containers as root on the host (read-only does not stop connect(2))",
			   src);
	else if (strcmp(src, "/run") == 0 || strcmp(src, "/var/run") == 0)
		review_add(out, "mount-run-dir", key, "mount only the file the job needs",
			   "%s holds the host's sockets (docker, containerd, D-Bus, systemd)", src);
	else if (is_ssh_agent(src, in->ssh_auth_sock))
		review_add(out, "mount-ssh-agent", key,
			   "remove it; give the job a deploy key of its own, read-only",
			   "%s is an SSH agent's socket: the agent can sign in as you anywhere "
			   "your keys open",
			   src);
	else if (ar_check_is_credential_path(src))
		review_add(out, "mount-credentials", key,
			   "mount a short-lived credential made for the job instead",
			   "%s is a credential directory", src);
	if (m->readonly)
		return;
	if (covers_home(src, in->home))
		review_add(out, "mount-home-rw", key,
			   "mount the one directory the job writes, or add \"readonly\": true",
			   "%s is mounted read-write at %s: your home (dotfiles, shell startup, "
			   "credentials) is writable by the agent",
			   src, m->target);
	ar_autofree char *git = ar_xasprintf("%s/.git", src);
	if (stat(git, &st) == 0 && !git_covered(in->p, i))
		review_add(out, "mount-git-writable", key,
			   "mount it read-only, or add a read-only mount of its .git after it",
			   "%s is a repository mounted read-write with its .git: the agent can "
			   "write hooks and config that run on the host at the next git command",
			   src);
}

void review_mounts(const struct ar_review_input *in, struct ar_review *out)
{
	for (size_t i = 0; i < in->p->n_mounts; i++)
		one_mount(in, i, out);
}

void review_limits(const struct ar_review_input *in, struct ar_review *out)
{
	const struct ar_limits *l = &in->p->limits;
	char pids[32], dpids[32];
	snprintf(pids, sizeof(pids), "%" PRId64, l->pids);
	snprintf(dpids, sizeof(dpids), "%d", AR_POLICY_DEFAULT_PIDS);
	const struct {
		const char *key, *shown, *dflt;
		bool above;
	} rows[] = {
	    {"limits.pids", pids, dpids, l->pids > AR_POLICY_DEFAULT_PIDS},
	    {"limits.memory", l->memory_str, AR_POLICY_DEFAULT_MEMORY_STR,
	     l->memory > AR_POLICY_DEFAULT_MEMORY},
	    {"limits.cpus", l->cpus_str, AR_POLICY_DEFAULT_CPUS_STR,
	     l->cpus_milli > AR_POLICY_DEFAULT_CPUS_MILLI},
	};
	for (size_t i = 0; i < AR_ARRAY_SIZE(rows); i++) {
		bool exact = false;
		if (in->policy_text != NULL)
			json_locate(in->policy_text, in->policy_len, rows[i].key, &exact);
		if (in->policy_text != NULL && !exact)
			review_add(out, "limits-absent", rows[i].key,
				   "set it to what the job needs (the default is a guess)",
				   "%s is not set: the default %s applies", rows[i].key,
				   rows[i].dflt);
		else if (rows[i].above)
			review_add(out, "limits-above-default", rows[i].key,
				   "lower it to what the job was measured to need",
				   "%s is %s, above the default %s", rows[i].key,
				   rows[i].shown ? rows[i].shown : "?", rows[i].dflt);
	}
}

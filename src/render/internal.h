/* Shared between the k8s renderers (src/render/k8s*.c). */
#ifndef AGENTRUN_RENDER_K8S_INTERNAL_H
#define AGENTRUN_RENDER_K8S_INTERNAL_H

#include "agentrun/k8s.h"
#include "agentrun/spec.h"
#include "k8s_tree.h"

#define K8S_PROXY_MEMORY "128Mi"
#define K8S_PROXY_CPU	 "500m"
#define K8S_PROXY_UID	 65534
/* The audit's tail beside the proxy, and the agent's init container that fetches the
 * proxy's CA bundle (secrets) */
#define K8S_BUSYBOX_IMAGE "busybox:1.36"
/* A file's mode in a Secret volume (0440: the proxy's fsGroup reads it) */
#define K8S_SECRET_MODE 0440

struct k8s_ctx {
	const struct ar_policy *p;
	const struct ar_spec *sp; /* the agent's: what its container gets */
	const struct ar_render_options *o;
	const struct ar_k8s_options *k;
	const char *ns;
	const char *image;
	const char *proxy_image;
	struct kn **objs;
	size_t n_objs;
};

/* A new top-level object apiVersion/kind/metadata{name, namespace, labels, annotations}
 * appended to c->objs; `from` names the policy fields it comes from. */
struct kn *k8s_object(struct k8s_ctx *c, const char *api, const char *kind, const char *name,
		      const char *component, const char *from);
/* {name: NAME, component: COMPONENT}: what a selector matches. */
void k8s_selector_labels(struct kn *labels, const struct ar_policy *p, const char *component);
/* The restricted container securityContext every container here gets. */
void k8s_container_security(struct kn *container, const struct ar_policy *p);
/* The seccompProfile for the policy's `seccomp`, with its comment; p NULL (the proxy,
 * whose syscalls are not the agent's): RuntimeDefault. */
void k8s_seccomp_profile(struct kn *sc, const struct ar_policy *p);

/* src/render/k8s_net.c: the proxy Deployment and Service, NetworkPolicies, Cilium. */
void k8s_proxy_objects(struct k8s_ctx *c);
void k8s_network_policies(struct k8s_ctx *c);
void k8s_cilium_policy(struct k8s_ctx *c);

#endif

/* The object tree `render --format k8s` builds and prints (private to src/render/):
 * maps, lists and scalars, each entry with an optional comment. One tree, two printers
 * (a YAML block document and JSON), so the YAML and the v1/List cannot disagree. */
#ifndef AGENTRUN_RENDER_K8S_TREE_H
#define AGENTRUN_RENDER_K8S_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agentrun/util.h"

enum kn_type { KN_MAP, KN_LIST, KN_STR, KN_INT, KN_BOOL };

struct kn {
	enum kn_type type;
	char *key;     /* set inside maps, NULL inside lists */
	char *str;     /* KN_STR */
	int64_t num;   /* KN_INT */
	bool b;	       /* KN_BOOL */
	char *comment; /* "# ..." line(s) printed before the entry in YAML */
	struct kn **kids;
	size_t n;
};

struct kn *kn_new_map(void);
void kn_free(struct kn *n);
void kn_cleanup(struct kn **n);
#define kn_auto __attribute__((cleanup(kn_cleanup)))

/* Children; key is NULL when the parent is a list. Each returns the new node. */
struct kn *kn_map(struct kn *parent, const char *key);
struct kn *kn_list(struct kn *parent, const char *key);
struct kn *kn_str(struct kn *parent, const char *key, const char *v);
struct kn *kn_strf(struct kn *parent, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
struct kn *kn_int(struct kn *parent, const char *key, int64_t v);
struct kn *kn_bool(struct kn *parent, const char *key, bool v);
/* Append a comment line to n (several calls make several lines); returns n. */
struct kn *kn_note(struct kn *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A child by key, or NULL. */
struct kn *kn_get(const struct kn *map, const char *key);

/* One YAML document ("---", the object's comments, the block mapping). */
void kn_print_yaml(const struct kn *obj, struct ar_buf *out);
/* The objects as {"apiVersion": "v1", "kind": "List", "items": [...]}. */
void kn_print_json_list(struct kn *const *objs, size_t n, struct ar_buf *out);

#endif

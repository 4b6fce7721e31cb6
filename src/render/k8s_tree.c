/* The k8s object tree and its two printers: block YAML (two-space indent, list items at
 * their key's indent as kubectl prints them, comments kept) and JSON (json_writer.c).
 * Strings that YAML could read as something else are written as JSON strings, which
 * are valid YAML double-quoted scalars. */
#define _GNU_SOURCE
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "json_writer.h"
#include "k8s_tree.h"

static struct kn *add(struct kn *parent, const char *key, enum kn_type type)
{
	struct kn *n = ar_xcalloc(1, sizeof(*n));
	n->type = type;
	n->key = key != NULL ? ar_xstrdup(key) : NULL;
	if (parent != NULL) {
		parent->kids = ar_xrealloc(parent->kids, (parent->n + 1) * sizeof(*parent->kids));
		parent->kids[parent->n++] = n;
	}
	return n;
}

struct kn *kn_new_map(void)
{
	return add(NULL, NULL, KN_MAP);
}

void kn_free(struct kn *n)
{
	if (n == NULL)
		return;
	for (size_t i = 0; i < n->n; i++)
		kn_free(n->kids[i]);
	free(n->kids);
	free(n->key);
	free(n->str);
	free(n->comment);
	free(n);
}

void kn_cleanup(struct kn **n)
{
	kn_free(*n);
	*n = NULL;
}

struct kn *kn_map(struct kn *parent, const char *key)
{
	return add(parent, key, KN_MAP);
}

struct kn *kn_list(struct kn *parent, const char *key)
{
	return add(parent, key, KN_LIST);
}

struct kn *kn_str(struct kn *parent, const char *key, const char *v)
{
	struct kn *n = add(parent, key, KN_STR);
	n->str = ar_xstrdup(v);
	return n;
}

struct kn *kn_strf(struct kn *parent, const char *key, const char *fmt, ...)
{
	va_list ap;
	ar_autobuf struct ar_buf b = {0};
	va_start(ap, fmt);
	ar_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	return kn_str(parent, key, b.data);
}

struct kn *kn_int(struct kn *parent, const char *key, int64_t v)
{
	struct kn *n = add(parent, key, KN_INT);
	n->num = v;
	return n;
}

struct kn *kn_bool(struct kn *parent, const char *key, bool v)
{
	struct kn *n = add(parent, key, KN_BOOL);
	n->b = v;
	return n;
}

struct kn *kn_note(struct kn *n, const char *fmt, ...)
{
	va_list ap;
	ar_autobuf struct ar_buf b = {0};
	if (n->comment != NULL)
		ar_buf_printf(&b, "%s\n", n->comment);
	va_start(ap, fmt);
	ar_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	free(n->comment);
	n->comment = ar_buf_steal(&b);
	return n;
}

struct kn *kn_get(const struct kn *map, const char *key)
{
	for (size_t i = 0; map != NULL && i < map->n; i++)
		if (map->kids[i]->key != NULL && strcmp(map->kids[i]->key, key) == 0)
			return map->kids[i];
	return NULL;
}

/* ---- YAML ---- */

/* Plain (unquoted) only when no YAML reader could take it for a number, a boolean, a
 * null, a flow collection, an anchor or a comment: letters first, a narrow alphabet. */
static bool yaml_plain_ok(const char *s)
{
	static const char *const reserved[] = {"true", "false", "yes", "no", "on",
					       "off",  "null",	"y",   "n",  "~"};
	if (!isalpha((unsigned char)s[0]) && s[0] != '/')
		return false;
	for (const char *c = s; *c; c++)
		if (!isalnum((unsigned char)*c) && strchr("/_.-", *c) == NULL)
			return false;
	for (size_t i = 0; i < AR_ARRAY_SIZE(reserved); i++)
		if (strcasecmp(s, reserved[i]) == 0)
			return false;
	return true;
}

static void yaml_scalar(const struct kn *n, struct ar_buf *out)
{
	if (n->type == KN_INT)
		ar_buf_printf(out, "%" PRId64, n->num);
	else if (n->type == KN_BOOL)
		ar_buf_puts(out, n->b ? "true" : "false");
	else if (yaml_plain_ok(n->str))
		ar_buf_puts(out, n->str);
	else
		ar_json_quote(out, n->str);
}

static void yaml_indent(int indent, struct ar_buf *out)
{
	for (int i = 0; i < indent; i++)
		ar_buf_putc(out, ' ');
}

static void yaml_comment(const char *c, int indent, struct ar_buf *out)
{
	while (c != NULL && *c) {
		const char *nl = strchr(c, '\n');
		size_t len = nl != NULL ? (size_t)(nl - c) : strlen(c);
		yaml_indent(indent, out);
		ar_buf_puts(out, "# ");
		ar_buf_append(out, c, len);
		ar_buf_putc(out, '\n');
		c = nl != NULL ? nl + 1 : NULL;
	}
}

static bool is_collection(const struct kn *n)
{
	return n->type == KN_MAP || n->type == KN_LIST;
}

static void yaml_entries(const struct kn *n, int indent, bool first_inline, struct ar_buf *out);

/* The value after "key:" or "-": inline for scalars and empty collections, else on the
 * following lines. Maps nest two deeper; lists under a key stay at the key's indent. */
static void yaml_value(const struct kn *n, int indent, bool in_list, struct ar_buf *out)
{
	if (!is_collection(n)) {
		ar_buf_putc(out, ' ');
		yaml_scalar(n, out);
		ar_buf_putc(out, '\n');
	} else if (n->n == 0) {
		ar_buf_puts(out, n->type == KN_MAP ? " {}\n" : " []\n");
	} else if (in_list && n->type == KN_MAP) {
		ar_buf_putc(out, ' ');
		yaml_entries(n, indent + 2, true, out);
	} else {
		ar_buf_putc(out, '\n');
		int child = n->type == KN_MAP || in_list ? indent + 2 : indent;
		yaml_entries(n, child, false, out);
	}
}

static void yaml_entries(const struct kn *n, int indent, bool first_inline, struct ar_buf *out)
{
	for (size_t i = 0; i < n->n; i++) {
		const struct kn *k = n->kids[i];
		bool inline_here = first_inline && i == 0;
		if (!inline_here) {
			yaml_comment(k->comment, indent, out);
			/* a list item's map starts on the dash line: its first comment goes first
			 */
			if (n->type == KN_LIST && k->type == KN_MAP && k->n > 0)
				yaml_comment(k->kids[0]->comment, indent, out);
			yaml_indent(indent, out);
		}
		if (n->type == KN_MAP) {
			ar_buf_printf(out, "%s:", k->key);
			yaml_value(k, indent, false, out);
		} else {
			ar_buf_putc(out, '-');
			yaml_value(k, indent, true, out);
		}
	}
}

void kn_print_yaml(const struct kn *obj, struct ar_buf *out)
{
	ar_buf_puts(out, "---\n");
	yaml_comment(obj->comment, 0, out);
	yaml_entries(obj, 0, false, out);
}

/* ---- JSON ---- */

static void json_node(struct jw *w, const struct kn *n, const char *key)
{
	switch (n->type) {
	case KN_MAP:
	case KN_LIST: {
		char open = n->type == KN_MAP ? '{' : '[';
		ar_jw_open(w, key, open);
		for (size_t i = 0; i < n->n; i++)
			json_node(w, n->kids[i], n->type == KN_MAP ? n->kids[i]->key : NULL);
		ar_jw_close(w, n->type == KN_MAP ? '}' : ']');
		break;
	}
	case KN_STR:
		ar_jw_str(w, key, n->str);
		break;
	case KN_INT:
		ar_jw_int(w, key, n->num);
		break;
	case KN_BOOL:
		ar_jw_bool(w, key, n->b);
		break;
	}
}

void kn_print_json_list(struct kn *const *objs, size_t n, struct ar_buf *out)
{
	struct jw w = {.out = out};
	ar_jw_open(&w, NULL, '{');
	ar_jw_str(&w, "apiVersion", "v1");
	ar_jw_str(&w, "kind", "List");
	ar_jw_open(&w, "items", '[');
	for (size_t i = 0; i < n; i++)
		json_node(&w, objs[i], NULL);
	ar_jw_close(&w, ']');
	ar_jw_close(&w, '}');
}

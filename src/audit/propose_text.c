/* The proposal as text (docs/learn.md): the proposed policy (the user's file with only
 * allowed_hosts, proxy.max_bytes_out, proxy.allow_private and mode rewritten, every
 * other byte kept: a small scanner finds where each value sits), a unified diff of
 * it, the report for people and the --json document. Pure and deterministic. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentrun/propose.h"
#include "jsonspan.h"

#define INLINE_MAX 100 /* a value that fits this line width stays on one line */

/* The whitespace before the first non-blank byte of the line holding `at`. */
static void line_indent(const char *s, size_t at, char *out, size_t size)
{
	size_t b = at;
	while (b > 0 && s[b - 1] != '\n')
		b--;
	size_t e = b;
	while (e < at && (s[e] == ' ' || s[e] == '\t') && e - b + 1 < size)
		e++;
	memcpy(out, s + b, e - b);
	out[e - b] = '\0';
}

struct edit {
	size_t start, end;
	char *text;
};

struct edits {
	struct edit v[8];
	size_t n;
};

static void edit_add(struct edits *e, size_t start, size_t end, char *text)
{
	e->v[e->n++] = (struct edit){start, end, text};
}

static const char *unit_of(const char *indent)
{
	return strchr(indent, '\t') ? "\t" : "  ";
}

/* [a, b] or {a, b} on one line when it fits from column col (col 0: always, for an
 * object written on one line), else one item a line under indent. */
static char *format_list(char open, char close, char *const *items, size_t n, const char *indent,
			 size_t col)
{
	ar_autobuf struct ar_buf b = {0};
	ar_buf_putc(&b, open);
	for (size_t i = 0; i < n; i++)
		ar_buf_printf(&b, "%s%s", i ? ", " : "", items[i]);
	ar_buf_putc(&b, close);
	if (n == 0 || col == 0 || (col + b.len <= INLINE_MAX && strchr(b.data, '\n') == NULL))
		return ar_xstrdup(b.data);
	ar_buf_reset(&b);
	ar_buf_printf(&b, "%c\n", open);
	for (size_t i = 0; i < n; i++)
		ar_buf_printf(&b, "%s%s%s%s\n", indent, unit_of(indent), items[i],
			      i + 1 < n ? "," : "");
	ar_buf_printf(&b, "%s%c", indent, close);
	return ar_xstrdup(b.data);
}

static char *quoted(const char *s)
{
	ar_autobuf struct ar_buf b = {0};
	ar_json_quote(&b, s);
	return ar_xstrdup(b.data);
}

static char *hosts_value(const struct ar_proposal *p, const char *indent, size_t col)
{
	ar_autostrv char **items = ar_xcalloc(p->n_rules + 1, sizeof(char *));
	for (size_t i = 0; i < p->n_rules; i++)
		items[i] = quoted(p->rules[i].rule);
	return format_list('[', ']', items, p->n_rules, indent, col);
}

static char *budgets_value(const struct ar_proposal *p, const char *indent, size_t col)
{
	ar_autostrv char **items = ar_xcalloc(p->n_budgets + 1, sizeof(char *));
	for (size_t i = 0; i < p->n_budgets; i++) {
		ar_autofree char *q = quoted(p->budgets[i].host);
		items[i] = ar_xasprintf("%s: %" PRId64, q, p->budgets[i].max_bytes_out);
	}
	return format_list('{', '}', items, p->n_budgets, indent, col);
}

static char *private_value(const struct ar_proposal *p, const char *indent, size_t col)
{
	ar_autostrv char **items = ar_xcalloc(p->n_allow_private + 1, sizeof(char *));
	for (size_t i = 0; i < p->n_allow_private; i++)
		items[i] = quoted(p->allow_private[i]);
	return format_list('[', ']', items, p->n_allow_private, indent, col);
}

typedef char *value_fn(const struct ar_proposal *p, const char *indent, size_t col);

/* The proxy members the proposal writes: when it has something, or the policy had it. */
static const struct {
	const char *key;
	value_fn *value;
} proxy_keys[] = {
    {"max_bytes_out", budgets_value},
    {"allow_private", private_value},
};

static bool proxy_has(const struct ar_proposal *p, size_t i)
{
	return i == 0 ? p->n_budgets > 0 : p->n_allow_private > 0;
}

static char *proxy_value(const struct ar_proposal *p, const char *indent, size_t col)
{
	char *items[AR_ARRAY_SIZE(proxy_keys) + 1] = {0};
	size_t n = 0;
	ar_autofree char *inner = ar_xasprintf("%s%s", indent, unit_of(indent));
	for (size_t i = 0; i < AR_ARRAY_SIZE(proxy_keys); i++) {
		if (!proxy_has(p, i))
			continue;
		ar_autofree char *v = proxy_keys[i].value(p, inner, col ? strlen(inner) + 20 : 0);
		items[n++] = ar_xasprintf("\"%s\": %s", proxy_keys[i].key, v);
	}
	char *out = format_list('{', '}', items, n, indent, col);
	for (size_t i = 0; i < n; i++)
		free(items[i]);
	return out;
}

/* Members an object lacks, inserted after its last member in one edit (so that their
 * order is the order they are added in). */
struct inserts {
	const struct json_object *o;
	const char *s;
	struct ar_buf text;
	char indent[64];
	bool inline_obj; /* the last member shares the line of the opening brace */
};

static void inserts_init(struct inserts *in, const char *s, const struct json_object *o)
{
	memset(in, 0, sizeof(*in));
	in->o = o;
	in->s = s;
	if (o->n == 0) {
		in->inline_obj = true;
		return;
	}
	size_t at = o->m[o->n - 1].key_at;
	in->inline_obj = memchr(s + o->open, '\n', at - o->open) == NULL;
	line_indent(s, at, in->indent, sizeof(in->indent));
}

static void inserts_add(struct inserts *in, const struct ar_proposal *p, const char *key,
			value_fn *fn)
{
	bool first = in->o->n == 0 && in->text.len == 0;
	ar_autofree char *v =
	    fn(p, in->indent, in->inline_obj ? 0 : strlen(in->indent) + strlen(key) + 4);
	if (in->inline_obj)
		ar_buf_printf(&in->text, "%s\"%s\": %s", first ? "" : ", ", key, v);
	else
		ar_buf_printf(&in->text, ",\n%s\"%s\": %s", in->indent, key, v);
}

static void inserts_done(struct inserts *in, struct edits *e)
{
	if (in->text.len > 0) {
		size_t at = in->o->n ? in->o->m[in->o->n - 1].vend : in->o->open + 1;
		edit_add(e, at, at, ar_xstrdup(in->text.data));
	}
	ar_buf_free(&in->text);
}

/* Replace a member's value (formatted from where it starts), or insert it. */
static void set_member(const char *s, const struct json_member *m, struct inserts *in,
		       const struct ar_proposal *p, const char *key, value_fn *fn, struct edits *e)
{
	char indent[64];
	if (m == NULL) {
		inserts_add(in, p, key, fn);
		return;
	}
	line_indent(s, m->key_at, indent, sizeof(indent));
	size_t b = m->vstart;
	while (b > 0 && s[b - 1] != '\n')
		b--;
	edit_add(e, m->vstart, m->vend, fn(p, indent, m->vstart - b));
}

static char *enforce_value(const struct ar_proposal *p, const char *indent, size_t col)
{
	return ar_xstrdup("\"enforce\"");
}

static void edit_proxy(const char *s, size_t len, const struct json_object *top,
		       const struct ar_proposal *p, struct inserts *top_in, struct edits *e,
		       struct json_object *px)
{
	const struct json_member *m = json_find(top, "proxy");
	if (m == NULL || s[m->vstart] != '{' || json_read_object(s, len, m->vstart, px) == -1) {
		if (m == NULL && (proxy_has(p, 0) || proxy_has(p, 1)))
			inserts_add(top_in, p, "proxy", proxy_value);
		return;
	}
	struct inserts in;
	inserts_init(&in, s, px);
	for (size_t i = 0; i < AR_ARRAY_SIZE(proxy_keys); i++) {
		const struct json_member *k = json_find(px, proxy_keys[i].key);
		if (k != NULL || proxy_has(p, i))
			set_member(s, k, &in, p, proxy_keys[i].key, proxy_keys[i].value, e);
	}
	inserts_done(&in, e);
}

static int cmp_edit(const void *a, const void *b)
{
	const struct edit *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start ? 1 : 0;
}

/* The text with every edit made (they never overlap: each is one member's value, or
 * an insertion after an object's last member). */
static void apply(const char *s, size_t len, struct edits *e, struct ar_buf *out)
{
	size_t pos = 0;
	qsort(e->v, e->n, sizeof(e->v[0]), cmp_edit);
	for (size_t i = 0; i < e->n; i++) {
		ar_buf_append(out, s + pos, e->v[i].start - pos);
		ar_buf_puts(out, e->v[i].text);
		free(e->v[i].text);
		pos = e->v[i].end;
	}
	ar_buf_append(out, s + pos, len - pos);
}

static void fresh_policy(const struct ar_proposal *p, struct ar_buf *out)
{
	ar_autofree char *hosts = hosts_value(p, "  ", 19);
	ar_buf_printf(out, "{\n  \"allowed_hosts\": %s", hosts);
	if (proxy_has(p, 0) || proxy_has(p, 1)) {
		ar_autofree char *px = proxy_value(p, "  ", 11);
		ar_buf_printf(out, ",\n  \"proxy\": %s", px);
	}
	ar_buf_puts(out, "\n}\n");
}

int ar_propose_policy_text(const struct ar_proposal *p, const char *text, size_t len,
			   struct ar_buf *out, ar_error_t *err)
{
	struct json_object top, px;
	struct edits e = {0};
	struct inserts in;
	if (text == NULL) {
		fresh_policy(p, out);
		return 0;
	}
	size_t at = json_skip_ws(text, len, 0);
	if (at >= len || text[at] != '{' || json_read_object(text, len, at, &top) == -1)
		return ar_error_make(err, 0, "not a JSON object the proposal can edit");
	inserts_init(&in, text, &top);
	set_member(text, json_find(&top, "allowed_hosts"), &in, p, "allowed_hosts", hosts_value,
		   &e);
	const struct json_member *mode = json_find(&top, "mode");
	if (p->mode_learn && mode != NULL)
		edit_add(&e, mode->vstart, mode->vend, enforce_value(p, "", 0));
	edit_proxy(text, len, &top, p, &in, &e, &px);
	inserts_done(&in, &e);
	apply(text, len, &e, out);
	return 0;
}

static void put_names(struct ar_buf *out, const struct ar_proposal_rule *r, size_t max)
{
	for (size_t i = 0; i < r->n_names && i < max; i++)
		ar_buf_printf(out, "%s%s", i ? ", " : "", r->names[i]);
	if (r->n_names > max)
		ar_buf_printf(out, ", ... (%zu in all)", r->n_names);
}

void ar_proposal_format_text(const struct ar_proposal *p, const char *policy_text, const char *diff,
			     struct ar_buf *out)
{
	ar_buf_printf(out,
		      "proposal from %" PRIu64 " allowed connection(s), %" PRIu64
		      " learned: %zu rule(s)\n",
		      p->requests, p->learned, p->n_rules);
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct ar_proposal_rule *r = &p->rules[i];
		ar_buf_printf(out, "  %-6s %s: %" PRIu64 " request(s), %" PRIu64 " bytes out; ",
			      r->added ? "add" : "keep", r->rule, r->requests, r->bytes_out);
		put_names(out, r, 8);
		ar_buf_putc(out, '\n');
	}
	for (size_t i = 0; i < p->n_removed; i++)
		ar_buf_printf(out, "  %-6s %s: allowed nothing in this run\n", "remove",
			      p->removed[i]);
	for (size_t i = 0; i < p->n_budgets; i++)
		ar_buf_printf(out, "  budget %s: %" PRId64 " bytes out\n", p->budgets[i].host,
			      p->budgets[i].max_bytes_out);
	for (size_t i = 0; i < p->n_allow_private; i++)
		ar_buf_printf(out, "  private %s\n", p->allow_private[i]);
	for (size_t i = 0; i < p->n_private_removed; i++)
		ar_buf_printf(out, "  remove private %s: no address of this run was in it\n",
			      p->private_removed[i]);
	if (p->mode_learn)
		ar_buf_puts(out, "  mode: learn -> enforce\n");
	ar_buf_putc(out, '\n');
	if (diff == NULL)
		ar_buf_puts(out, policy_text);
	else if (*diff == '\0')
		ar_buf_puts(out, "the policy already is the proposal: no change\n");
	else
		ar_buf_puts(out, diff);
}

static void json_strv(struct ar_buf *out, char *const *v, size_t n)
{
	ar_buf_putc(out, '[');
	for (size_t i = 0; i < n; i++) {
		if (i)
			ar_buf_puts(out, ", ");
		ar_json_quote(out, v[i]);
	}
	ar_buf_putc(out, ']');
}

static void json_rules(struct ar_buf *out, const struct ar_proposal *p)
{
	ar_buf_puts(out, "[");
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct ar_proposal_rule *r = &p->rules[i];
		ar_buf_puts(out, i ? ", {\"rule\": " : "{\"rule\": ");
		ar_json_quote(out, r->rule);
		ar_buf_printf(out,
			      ", \"added\": %s, \"requests\": %" PRIu64 ", \"bytes_out\": %" PRIu64
			      ", \"names\": ",
			      r->added ? "true" : "false", r->requests, r->bytes_out);
		json_strv(out, r->names, r->n_names);
		ar_buf_putc(out, '}');
	}
	ar_buf_puts(out, "]");
}

void ar_proposal_format_json(const struct ar_proposal *p, const char *policy_text, const char *diff,
			     struct ar_buf *out)
{
	ar_buf_puts(out, "{\"allowed_hosts\": [");
	for (size_t i = 0; i < p->n_rules; i++) {
		if (i)
			ar_buf_puts(out, ", ");
		ar_json_quote(out, p->rules[i].rule);
	}
	ar_buf_puts(out, "], \"max_bytes_out\": {");
	for (size_t i = 0; i < p->n_budgets; i++) {
		if (i)
			ar_buf_puts(out, ", ");
		ar_json_quote(out, p->budgets[i].host);
		ar_buf_printf(out, ": %" PRId64, p->budgets[i].max_bytes_out);
	}
	ar_buf_puts(out, "}, \"allow_private\": ");
	json_strv(out, p->allow_private, p->n_allow_private);
	ar_buf_puts(out, ", \"rules\": ");
	json_rules(out, p);
	ar_buf_puts(out, ", \"remove\": ");
	json_strv(out, p->removed, p->n_removed);
	ar_buf_puts(out, ", \"remove_private\": ");
	json_strv(out, p->private_removed, p->n_private_removed);
	ar_buf_printf(out, ", \"requests\": %" PRIu64 ", \"learned\": %" PRIu64 ", \"policy\": ",
		      p->requests, p->learned);
	ar_json_quote(out, policy_text);
	ar_buf_puts(out, ", \"diff\": ");
	if (diff != NULL)
		ar_json_quote(out, diff);
	else
		ar_buf_puts(out, "null");
	ar_buf_puts(out, "}\n");
}

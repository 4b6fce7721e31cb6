/* ar-fuzz-replay: feed every file of a corpus directory (or the files named) to one
 * target, without libFuzzer, so the seed corpus and every past crash run as plain
 * regression tests in the normal build (gcc) and under ASan+UBSan.
 *   ar-fuzz-replay TARGET DIR|FILE...
 * Exit 0 when every input ran, 2 on usage errors or an empty corpus; a broken
 * invariant or a sanitizer report aborts. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agentrun/util.h"
#include "fuzz.h"

#define REPLAY_MAX_INPUT (1 << 20)

static int run_file(const struct ar_fuzz_target *t, const char *path)
{
	ar_auto_error ar_error_t err = NULL;
	ar_autofree char *data = NULL;
	size_t len = 0;

	if (ar_read_file(path, REPLAY_MAX_INPUT, &data, &len, &err) == -1) {
		ar_error_print(&err);
		return -1;
	}
	if (getenv("AR_FUZZ_VERBOSE") != NULL)
		fprintf(stderr, "ar-fuzz-replay: %s: %s (%zu bytes)\n", t->name, path, len);
	t->fn((const uint8_t *)data, len);
	return 0;
}

/* Files of dir in name order, so a failure reproduces the same way everywhere. */
static int run_dir(const struct ar_fuzz_target *t, const char *dir, size_t *count)
{
	struct dirent **ents = NULL;
	int n = scandir(dir, &ents, NULL, alphasort);
	int rc = 0;

	if (n == -1) {
		fprintf(stderr, "ar-fuzz-replay: scan `%s`: %s\n", dir, strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (rc == 0 && ents[i]->d_name[0] != '.') {
			ar_autofree char *path = ar_xasprintf("%s/%s", dir, ents[i]->d_name);
			struct stat st;
			if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
				rc = run_file(t, path);
				(*count)++;
			}
		}
		free(ents[i]);
	}
	free(ents);
	return rc;
}

int main(int argc, char **argv)
{
	const struct ar_fuzz_target *t = argc > 2 ? ar_fuzz_find(argv[1]) : NULL;
	size_t count = 0;

	if (t == NULL) {
		fprintf(stderr, "usage: ar-fuzz-replay TARGET DIR|FILE...\ntargets:\n");
		ar_fuzz_list();
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) == -1) {
			fprintf(stderr, "ar-fuzz-replay: `%s`: %s\n", argv[i], strerror(errno));
			return 2;
		}
		int rc = S_ISDIR(st.st_mode) ? run_dir(t, argv[i], &count) : run_file(t, argv[i]);
		count += !S_ISDIR(st.st_mode);
		if (rc == -1)
			return 2;
	}
	if (count == 0) {
		fprintf(stderr, "ar-fuzz-replay: %s: no inputs (an empty corpus tests nothing)\n",
			t->name);
		return 2;
	}
	printf("ar-fuzz-replay: %s: %zu input(s) ok\n", t->name, count);
	return 0;
}

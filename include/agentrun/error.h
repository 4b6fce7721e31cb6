/* The error contract (after crun's libcrun_error_t): a fallible function takes
 * `ar_error_t *err` last, returns a negative value (or NULL) on failure and fills
 * *err once with a message naming the file, field or flag at fault. Callers add
 * context with ar_error_wrap on the way up; the top level prints it once as
 * `agentrun: ...` with ar_error_print. */
#ifndef AGENTRUN_ERROR_H
#define AGENTRUN_ERROR_H

/* The exit statuses an error ends in (DESIGN §2), part of the same contract: the code
 * that fails knows which one applies (the sandbox's child tells run 126 from 127). */
#define AR_EXIT_OK	 0
#define AR_EXIT_USAGE	 2   /* bad input or usage, every subcommand but run */
#define AR_EXIT_DRIFT	 1   /* check: drift found */
#define AR_EXIT_RUN_FAIL 125 /* run: agentrun itself failed */
#define AR_EXIT_NOEXEC	 126 /* run: command not executable */
#define AR_EXIT_NOENT	 127 /* run: command not found */

struct ar_error_s {
	int status; /* errno value, 0 when the error is not a system error */
	char *msg;
};
typedef struct ar_error_s *ar_error_t;

/* Fill *err (if it is still empty) and return -1. With errno_value != 0 the
 * message gets ": strerror(errno_value)" appended. */
int ar_error_make(ar_error_t *err, int errno_value, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prefix the message in *err with context: "CONTEXT: old message". Returns -1. */
int ar_error_wrap(ar_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Print "agentrun: MSG\n" to stderr and release. Safe on an empty error. */
void ar_error_print(ar_error_t *err);
void ar_error_release(ar_error_t *err);

#define ar_auto_error __attribute__((cleanup(ar_error_release)))

#endif

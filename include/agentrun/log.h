/* Diagnostics on stderr, each line prefixed "agentrun: ". */
#ifndef AGENTRUN_LOG_H
#define AGENTRUN_LOG_H

enum ar_log_level { AR_LOG_ERROR, AR_LOG_WARN, AR_LOG_INFO, AR_LOG_DEBUG };

void ar_log_set_level(enum ar_log_level level);
enum ar_log_level ar_log_get_level(void);
void ar_log(enum ar_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define ar_warn(...)  ar_log(AR_LOG_WARN, __VA_ARGS__)
#define ar_info(...)  ar_log(AR_LOG_INFO, __VA_ARGS__)
#define ar_debug(...) ar_log(AR_LOG_DEBUG, __VA_ARGS__)

#endif

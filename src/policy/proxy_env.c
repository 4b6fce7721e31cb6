/* The proxy variables a sandbox gets, in one place: `run` (the /30's listener),
 * `render` (the proxy container), `check` (what must be present) and the policy's
 * reserved keys all read this table. */
#include <string.h>

#include "agentrun/policy.h"
#include "agentrun/util.h"

const char *const ar_proxy_env_url_vars[AR_PROXY_ENV_N_URL] = {"HTTP_PROXY", "HTTPS_PROXY",
							       "http_proxy", "https_proxy"};
const char *const ar_proxy_env_no_proxy_vars[AR_PROXY_ENV_N_NO_PROXY] = {"NO_PROXY", "no_proxy"};

void ar_proxy_env_foreach(const char *proxy_url,
			  void (*fn)(const char *key, const char *value, void *data), void *data)
{
	for (size_t i = 0; i < AR_PROXY_ENV_N_URL; i++)
		fn(ar_proxy_env_url_vars[i], proxy_url, data);
	for (size_t i = 0; i < AR_PROXY_ENV_N_NO_PROXY; i++)
		fn(ar_proxy_env_no_proxy_vars[i], AR_PROXY_ENV_NO_PROXY, data);
}

bool ar_proxy_env_is_proxy_var(const char *key)
{
	for (size_t i = 0; i < AR_PROXY_ENV_N_URL; i++)
		if (strcmp(key, ar_proxy_env_url_vars[i]) == 0)
			return true;
	for (size_t i = 0; i < AR_PROXY_ENV_N_NO_PROXY; i++)
		if (strcmp(key, ar_proxy_env_no_proxy_vars[i]) == 0)
			return true;
	return false;
}

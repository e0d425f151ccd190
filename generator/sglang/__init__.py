"""The SGLang side: the HTTP client, the fleet of servers, and one request's attempts."""

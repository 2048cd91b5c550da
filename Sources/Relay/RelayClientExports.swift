// The client side of the API (RelayAPI, RelayError, RelayClient, delivery tokens, signed requests) lives in the
// RelayClient library, which senders use without this server; the server's users see it through Relay as before.
@_exported public import RelayClient

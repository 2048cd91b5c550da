// The Sender's APNs layer frames envelopes with APNsAlertTransport (the APNs JSON body of docs/PROTOCOL.md §4 and
// APNs' 4,096-byte limit). That framing lives in the small PushTransport library, not here, because the device side
// (NotificationFilter, modelling the notification service extension) must unframe the same bodies without linking
// NIO, HTTP/2 or TLS; Sender re-exports it so senders and the relay see the APNs framing through Sender.
@_exported public import PushTransport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The deadlines and the cap every accepted connection of a server lives under (docs/RELAY.md "Connections").
///
/// A connection must finish its TLS handshake within ``handshakeTimeout`` of being accepted, and send a complete first
/// request (an HTTP/1.1 head, an HTTP/2 HEADERS frame) within ``requestHeadTimeout`` of the handshake; a connection
/// with no request in progress is closed after ``idleTimeout``; a request must be answered within ``requestTimeout``
/// of its head (which bounds a body sent slowly). No deadline is reset by bytes arriving, so a client that trickles a
/// ClientHello, an HTTP/2 preface or a header (slowloris) is closed like one that sends nothing. At most
/// ``maximumConnections`` are open at once: at the cap, the connection that has waited longest without a request in
/// progress is closed to make room, so idle connections can never lock a new client out.
public struct ConnectionLimits: Sendable, Hashable {
    /// From accept to a finished TLS handshake.
    public var handshakeTimeout: Duration
    /// From a finished handshake to the first complete request head.
    public var requestHeadTimeout: Duration
    /// How long a connection may stay open with no request in progress, once it has had one.
    public var idleTimeout: Duration
    /// From a request's head to its answer.
    public var requestTimeout: Duration
    /// The most connections open at once; below the process's file descriptor limit.
    public var maximumConnections: Int

    /// - Parameters:
    ///   - handshakeTimeout: default 10 s.
    ///   - requestHeadTimeout: default 10 s.
    ///   - idleTimeout: default 75 s (longer than the 60 s common client pools keep an idle connection).
    ///   - requestTimeout: default 30 s.
    ///   - maximumConnections: default ``defaultMaximumConnections()``.
    public init(
        handshakeTimeout: Duration = .seconds(10),
        requestHeadTimeout: Duration = .seconds(10),
        idleTimeout: Duration = .seconds(75),
        requestTimeout: Duration = .seconds(30),
        maximumConnections: Int = ConnectionLimits.defaultMaximumConnections()
    ) {
        self.handshakeTimeout = handshakeTimeout
        self.requestHeadTimeout = requestHeadTimeout
        self.idleTimeout = idleTimeout
        self.requestTimeout = requestTimeout
        self.maximumConnections = maximumConnections
    }

    /// File descriptors kept for everything but clients: the store, APNs connections, the event loops, logs.
    public static let reservedDescriptors = 64

    /// The soft limit on open file descriptors (`ulimit -n`), capped at 1,048,576 when unlimited.
    public static func descriptorLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        // RLIM_INFINITY is all bits set; the cap covers it.
        return Int(min(limit.rlim_cur, 1 << 20))
    }

    /// The descriptor limit less ``reservedDescriptors``, at least 16.
    public static func defaultMaximumConnections() -> Int {
        max(16, Self.descriptorLimit() - Self.reservedDescriptors)
    }

    /// What is wrong with these limits, said for the option names of `names`; nil when they are usable.
    ///
    /// - Parameter names: How the caller's users set each limit (a flag name, a configuration key).
    public func problem(names: OptionNames = OptionNames()) -> String? {
        for (value, name) in [
            (self.handshakeTimeout, names.handshakeTimeout), (self.requestHeadTimeout, names.requestHeadTimeout),
            (self.idleTimeout, names.idleTimeout), (self.requestTimeout, names.requestTimeout),
        ] where value <= .zero {
            return "\(name) must be more than 0 seconds"
        }
        let descriptors = Self.descriptorLimit()
        guard self.maximumConnections >= 1, self.maximumConnections <= descriptors - 16 else {
            return "\(names.maximumConnections) must be 1 to \(descriptors - 16) (the file descriptor limit is "
                + "\(descriptors), and connections past it fail to be accepted); lower it or raise `ulimit -n`"
        }
        return nil
    }

    /// How the limits are named to people (flags by default).
    public struct OptionNames: Sendable {
        public var handshakeTimeout = "--tls-handshake-timeout"
        public var requestHeadTimeout = "--request-head-timeout"
        public var idleTimeout = "--idle-timeout"
        public var requestTimeout = "--request-timeout"
        public var maximumConnections = "--max-connections"

        public init() {}
    }
}

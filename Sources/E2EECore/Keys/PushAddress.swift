/// A push service: who delivers a device's pushes (docs/PROTOCOL.md §11.1). Extensible: a reader keeps a service
/// it does not know (the address is still well formed), and whoever sends decides per device whether it can deliver
/// to it.
public struct PushService: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    /// Apple Push Notification service: the address is `<topic>/<device token>` (``APNsAddress``).
    public static let apns = PushService(rawValue: "apns")

    /// The rule of a service name, for messages.
    public static let rule = "a push service is 1-32 bytes of a-z, 0-9 and '-'"

    /// What is wrong with this name, or nil when it is well formed.
    public var problem: String? {
        let bytes = self.rawValue.utf8
        guard (1...32).contains(bytes.count) else { return "\(Self.rule); got \(bytes.count) bytes" }
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"):
                continue
            default: return Self.rule
            }
        }
        return nil
    }

    public var description: String { self.rawValue }

    public init(from decoder: any Decoder) throws {
        self.rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(self.rawValue)
    }
}

/// Where a device receives pushes: a service and an address whose syntax belongs to that service (docs/PROTOCOL.md
/// §11.1). The one push-address concept of the project: the device list's `push`, a device request's, the relay's
/// registration and its stores all hold this.
///
/// Well formed (``problem``): the service per ``PushService/rule``; the address 1-4096 bytes of printable ASCII
/// without spaces; and, for a service this code knows, that service's rule (``APNsAddress``). An address of a
/// service this code does not know is kept as it is: whoever cannot deliver to it says so per device.
public struct PushAddress: Sendable, Hashable {
    public var service: PushService
    /// Opaque except to `service`.
    public var address: String

    /// The most bytes an address has.
    public static let maximumAddressLength = 4096

    /// An address as given; ``problem`` says whether it is well formed.
    public init(service: PushService, address: String) {
        self.service = service
        self.address = address
    }

    /// The address of an APNs device.
    public init(_ apns: APNsAddress) {
        self.init(service: .apns, address: apns.text)
    }

    /// The APNs view of this address: nil when the service is not APNs or the address is not an APNs address.
    public var apns: APNsAddress? {
        self.service == .apns ? APNsAddress(parsing: self.address) : nil
    }

    /// What is wrong with this address, or nil when it is well formed (the rules above).
    public var problem: String? {
        if let problem = self.service.problem { return problem }
        let bytes = self.address.utf8
        guard (1...Self.maximumAddressLength).contains(bytes.count) else {
            return "a push address is 1-\(Self.maximumAddressLength) bytes; got \(bytes.count)"
        }
        // Printable ASCII without the space: 0x21-0x7e.
        guard bytes.allSatisfy({ (0x21...0x7e).contains($0) }) else {
            return "a push address is printable ASCII without spaces"
        }
        if self.service == .apns { return APNsAddress.problem(self.address) }
        return nil
    }
}

/// The APNs view of a push address: the app's topic (its bundle id) and the device token, written
/// `<topic>/<device token>` (docs/PROTOCOL.md §11.1).
public struct APNsAddress: Sendable, Hashable {
    /// The app's bundle id: 1-255 bytes, no '/'.
    public var topic: String
    /// The device token, by ``DeviceToken``'s rule.
    public var deviceToken: String

    public init(topic: String, deviceToken: String) {
        self.topic = topic
        self.deviceToken = deviceToken
    }

    /// Parses `<topic>/<device token>`; nil when ``problem(_:)`` finds something wrong.
    public init?(parsing address: String) {
        guard Self.problem(address) == nil, let slash = address.firstIndex(of: "/") else { return nil }
        self.topic = String(address[..<slash])
        self.deviceToken = String(address[address.index(after: slash)...])
    }

    /// `<topic>/<device token>`.
    public var text: String { "\(self.topic)/\(self.deviceToken)" }

    /// What is wrong with the parts, or nil when they make an APNs address.
    public static func problem(topic: String, deviceToken: String) -> String? {
        guard (1...255).contains(topic.utf8.count) else { return "an APNs topic is 1-255 bytes" }
        guard !topic.utf8.contains(UInt8(ascii: "/")) else { return "an APNs topic has no '/'" }
        return DeviceToken.problem(deviceToken)
    }

    /// What is wrong with `address` as `<topic>/<device token>`, or nil when it is one.
    public static func problem(_ address: String) -> String? {
        guard let slash = address.firstIndex(of: "/") else {
            return "an APNs address is <topic>/<device token>; it has no '/'"
        }
        return Self.problem(
            topic: String(address[..<slash]),
            deviceToken: String(address[address.index(after: slash)...])
        )
    }
}

extension PushAddress: Codable {
    enum CodingKeys: String, CodingKey {
        case service, address
        // The legacy form (read only): an APNs address as two fields.
        case deviceToken = "device_token"
        case topic
    }

    /// Reads `{"service", "address"}`, or the legacy `{"device_token", "topic"}` as an `apns` address. An object
    /// with keys of both forms is refused: which one the writer meant is not knowable.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let current = c.contains(.service) || c.contains(.address)
        let legacy = c.contains(.deviceToken) || c.contains(.topic)
        if current && legacy {
            throw E2EEError(.keyFile, "push has both service/address and the legacy device_token/topic")
        }
        if legacy {
            let token = try c.decode(String.self, forKey: .deviceToken)
            let topic = try c.decode(String.self, forKey: .topic)
            self.init(APNsAddress(topic: topic, deviceToken: token))
        } else {
            self.init(
                service: try c.decode(PushService.self, forKey: .service),
                address: try c.decode(String.self, forKey: .address)
            )
        }
    }

    /// Writes `{"service", "address"}` (never the legacy form).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(self.service, forKey: .service)
        try c.encode(self.address, forKey: .address)
    }
}

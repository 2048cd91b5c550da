public import E2EECore
public import Foundation
import PushTransport

/// A push ready to go: the push service's request and what it carries (for the caller's own records, never sent in
/// clear).
public struct BuiltPush: Sendable {
    /// The request, as the format of the device's service made it (an ``APNsRequest`` for APNs).
    public let push: any OutgoingPush
    public let messageID: MessageID
    public let kind: MessageKind
    /// The padding bucket of the body (see docs/PROTOCOL.md §6).
    public let bucket: Int
    /// The recipient device this push is sealed to.
    public let deviceID: String

    /// The APNs request, when the push is one.
    public var apnsRequest: APNsRequest? { self.push as? APNsRequest }
}

/// What a message becomes for one device of the recipient (fan-out, docs/PROTOCOL.md §11.7): a push, or why that
/// device gets none while the others are sent.
public struct DevicePush: Sendable {
    public let deviceID: String
    public let outcome: Result<BuiltPush, SenderError>
    /// Set when this device gets no push and that is no failure: `no-push-address` for the sender's own device
    /// without a push address (its copy of a message to its own user is only its echo, which it silences; with no
    /// address there is nowhere to send it). `outcome` then says so as an error, for a reader that asks.
    public let skipped: String?

    public init(deviceID: String, outcome: Result<BuiltPush, SenderError>, skipped: String? = nil) {
        self.deviceID = deviceID
        self.outcome = outcome
        self.skipped = skipped
    }
}

/// Builds pushes that look the same for every kind of message: each device's push is sealed with the padding of its
/// push address's service and framed by that service's ``PushFormat`` (``APNsFormat`` unless told otherwise).
///
/// Uniform by construction (APNs): the headers come from one function that does not know the kind
/// (`apns-push-type: alert`, `apns-priority: 10`, `apns-expiration: 0`, the app's bundle id as topic, no
/// collapse id, a fresh `apns-id`), and the body is always the placeholder alert plus the padded envelope, so a call
/// invite, a cancel, a receipt and a text of up to about 1 KB produce bodies of exactly the same length.
///
/// `apns-expiration: 0` ("deliver now or never") is the single policy for every kind: a push is a wake-up; an app
/// fetches what it missed from its own server. A per-kind policy would tell APNs which pushes are calls.
public struct PushBuilder: Sendable {
    public let identity: Identity
    /// One format per push service this sender delivers through; the first also frames a push to a device without
    /// a push address, when the send names one (``PushOverrides/address``).
    public let formats: [any PushFormat]
    /// The wall clock, for the signed send time.
    public let clock: WallClock

    /// A builder of APNs pushes (``APNsFormat``).
    ///
    /// - Parameters:
    ///   - identity: the sender.
    ///   - topic: an `apns-topic` for every push (`--topic`); `nil` (the default) uses the recipient card's
    ///     APNs address's topic, which is the bundle id the device registered its token for.
    ///   - clock: the clock for the signed send time.
    public init(identity: Identity, topic: String? = nil, clock: WallClock = .system) {
        self.init(identity: identity, formats: [APNsFormat(topic: topic)], clock: clock)
    }

    /// A builder of the pushes of each service of `formats`, which must not be empty and names each service once.
    public init(identity: Identity, formats: [any PushFormat], clock: WallClock = .system) {
        precondition(!formats.isEmpty, "a PushBuilder needs the format of at least one push service")
        self.identity = identity
        self.formats = formats
        self.clock = clock
    }

    /// The format of `service`, or nil when this sender does not deliver through it.
    public func format(for service: PushService) -> (any PushFormat)? {
        self.formats.first { $0.service == service }
    }

    /// The format a push to `device` is framed by: its address's service's; the first for a device without one.
    func format(of device: DeviceList.Device) -> (any PushFormat)? {
        guard let push = device.push else { return self.formats[0] }
        return self.format(for: push.service)
    }

    /// The headers every push carries, whatever its kind, with a fresh `apns-id`. Only `apns-id` differs between
    /// requests.
    public static func uniformHeaders(topic: String) -> [String: String] {
        Self.uniformHeaders(topic: topic, apnsIDText: RandomID.uuidText())
    }

    /// The headers every push carries, with `apnsID` as its `apns-id` (the relay gives each push its own id).
    public static func uniformHeaders(topic: String, apnsID: UUID) -> [String: String] {
        Self.uniformHeaders(topic: topic, apnsIDText: apnsID.uuidString.lowercased())
    }

    private static func uniformHeaders(topic: String, apnsIDText: String) -> [String: String] {
        [
            "apns-push-type": "alert",
            "apns-priority": "10",
            "apns-expiration": "0",
            "apns-topic": topic,
            "apns-id": apnsIDText,
        ]
    }

    /// Checks a device token against the one rule (``DeviceToken``: 64 to 200 hex digits, an even count) and returns
    /// it in lowercase. The error names the rule and what breaks it.
    public static func validateDeviceToken(_ token: String) throws(SenderError) -> String {
        if let problem = DeviceToken.problem(token) { throw SenderError(.badDeviceToken, problem) }
        return token.lowercased()
    }

    /// The devices a message to `list` goes to (docs/PROTOCOL.md §11.7): every device of the list, the sender's own
    /// included when the list is the sender's own user's. A message to one's own user that skipped the sending
    /// device would name it to whoever sees the pushes (the one device of the user that got nothing); the sending
    /// device silences its own echo (filter reason `own-echo`).
    public func targets(of list: DeviceList) -> [DeviceList.Device] {
        list.devices
    }

    /// Whether `device` of `list` is the sending device itself.
    public func isOwnDevice(_ device: DeviceList.Device, of list: DeviceList) -> Bool {
        list.userID == self.identity.userID && device.signingKey == self.identity.signingKey.publicKey
    }

    /// Seals `content` once per device of `list` (docs/PROTOCOL.md §11.7): each to that device's current key and
    /// push address, all with the same message id and signed send time, each a uniform push.
    ///
    /// - Parameters:
    ///   - content: what to send.
    ///   - list: the recipient's accepted device list (``ContactTrust``).
    ///   - deviceToken: a device token overriding the token of the device's APNs address; only for a user with one
    ///     device.
    ///   - messageID: the message id every device's push carries.
    ///   - sentAtMs: the signed send time; `nil` signs the builder's clock (``clock``), once for every device.
    ///   - topic: the `apns-topic`; default: the ``APNsFormat``'s topic, then the topic of each device's APNs address.
    /// - Returns: one outcome per device, in the list's order: a push, or why that device gets none
    ///   (`.unknownRecipient` for a device without a push address, `.tooLarge`, ...; the sender's own device
    ///   without a push address is ``DevicePush/skipped``, not a failure).
    /// - Throws: `.usage` for a device token with several devices, `.badDeviceToken` for a malformed override.
    public func fanOut(
        _ content: MessageContent,
        to list: DeviceList,
        deviceToken: String? = nil,
        messageID: MessageID = .random(),
        sentAtMs: UInt64? = nil,
        topic: String? = nil
    ) throws(SenderError) -> [DevicePush] {
        let devices = self.targets(of: list)
        if let deviceToken {
            guard devices.count == 1 else {
                throw SenderError(
                    .usage,
                    "a device token (--device-token, \"device_token\") only names the device of a user with one "
                        + "device; \(list.userID) has \(devices.count) (\(devices.map(\.deviceID).joined(separator: ", "))): "
                        + "leave it out to send to each device's own push address"
                )
            }
            _ = try (self.format(of: devices[0]) ?? self.formats[0]).checkedAddress(deviceToken)
        }
        let sentAt = sentAtMs ?? self.clock.unsignedMs
        return devices.map { device in
            if deviceToken == nil, device.push == nil, self.isOwnDevice(device, of: list) {
                return DevicePush(
                    deviceID: device.deviceID,
                    outcome: .failure(
                        SenderError(
                            .unknownRecipient,
                            "this device (\(device.deviceID)) has no push address in the list"
                        )
                    ),
                    skipped: "no-push-address"
                )
            }
            do throws(SenderError) {
                let built = try self.build(
                    content,
                    to: list,
                    device: device,
                    deviceToken: deviceToken,
                    messageID: messageID,
                    sentAtMs: sentAt,
                    topic: topic
                )
                return DevicePush(deviceID: device.deviceID, outcome: .success(built))
            } catch {
                return DevicePush(deviceID: device.deviceID, outcome: .failure(error))
            }
        }
    }

    /// Seals `content` for one device of `card` and frames it in its service's request (``PushFormat``).
    ///
    /// - Parameters:
    ///   - content: what to send.
    ///   - card: the recipient's device list.
    ///   - deviceID: the device; `nil` takes the list's only device, and a list with several is a usage error (use ``fanOut(_:to:deviceToken:messageID:sentAtMs:topic:)``).
    ///   - deviceToken: the device token; defaults to the token of the device's APNs address.
    ///   - messageID: the message id (random by default).
    ///   - sentAtMs: for tests and demos: the signed send time, in milliseconds since the epoch; a receiver judges
    ///     staleness from it. `nil` (the default) signs the builder's clock (``clock``).
    ///   - topic: the `apns-topic` of this push; default: the ``APNsFormat``'s topic, then the topic of the device's APNs address.
    /// - Returns: the request to send and what it carries.
    /// - Throws: `SenderError` with `.unknownRecipient` (no such device, no token or no topic), `.badDeviceToken`,
    ///   `.tooLarge` (saying what is too large for that kind) or `.usage` (a field out of range, several devices).
    public func build(
        _ content: MessageContent,
        to card: DeviceList,
        device deviceID: String? = nil,
        deviceToken: String? = nil,
        messageID: MessageID = .random(),
        sentAtMs: UInt64? = nil,
        topic: String? = nil
    ) throws(SenderError) -> BuiltPush {
        let device: DeviceList.Device
        if let deviceID {
            guard let named = card.device(named: deviceID) else {
                throw SenderError(.unknownRecipient, "\(card.userID) has no device \"\(deviceID)\"")
            }
            device = named
        } else {
            let devices = self.targets(of: card)
            guard devices.count == 1 else {
                throw SenderError(
                    .usage,
                    "\(card.userID) has \(devices.count) devices to send to: name one, or seal to each (fan-out)"
                )
            }
            device = devices[0]
        }
        return try self.build(
            content,
            to: card,
            device: device,
            deviceToken: deviceToken,
            messageID: messageID,
            sentAtMs: sentAtMs,
            topic: topic
        )
    }

    func build(
        _ content: MessageContent,
        to card: DeviceList,
        device: DeviceList.Device,
        deviceToken: String?,
        messageID: MessageID,
        sentAtMs: UInt64?,
        topic: String?
    ) throws(SenderError) -> BuiltPush {
        let name = "\(card.userID)'s device \"\(device.deviceID)\""
        // The device's service's format, unless an override names the address: a device whose address is of a
        // service this sender has no format for gets an explicit refusal of its own, and the rest of a fan-out
        // goes on. An override is an address of the first format's service when the device's has none.
        let format: any PushFormat
        if let found = self.format(of: device) {
            format = found
        } else if deviceToken != nil {
            format = self.formats[0]
        } else {
            let services = self.formats.map(\.service.rawValue).joined(separator: ", ")
            throw SenderError(
                .unsupportedPushService,
                "\(name) receives pushes through \"\(device.push?.service.rawValue ?? "")\"; this sender delivers "
                    + "through \(services) only"
            )
        }
        guard deviceToken != nil || device.push != nil else {
            throw SenderError(
                .unknownRecipient,
                "no push address for \(name): \(card.userID) must publish a card with its \"push\" (e2ee-send card "
                    + "--device-token on that device), or pass --device-token when it is the only device"
            )
        }
        let frame = try format.destination(
            device.push?.service == format.service ? device.push : nil,
            overrides: PushOverrides(address: deviceToken, topic: topic),
            recipient: name
        )
        let key = device.currentKey
        let message = InnerMessage(
            messageID: messageID,
            sentAtMs: sentAtMs ?? self.clock.unsignedMs,
            senderUserID: self.identity.userID,
            senderSigningKeyID: self.identity.signingKey.publicKey.keyID,
            content: content
        )
        let sealed: SealedPush
        do {
            sealed = try PushPayload.seal(
                message,
                to: key.publicKey,
                signingKey: self.identity.signingKey,
                padding: format.padding
            )
        } catch {
            if error.code == .tooLarge {
                throw Self.tooLarge(message, suite: key.publicKey.suite, padding: format.padding)
            }
            throw SenderError(error, context: "cannot seal the \(content.kind) for \(name)")
        }
        return BuiltPush(
            push: frame(sealed),
            messageID: messageID,
            kind: content.kind,
            bucket: sealed.bucket,
            deviceID: device.deviceID
        )
    }
}

extension PushBuilder {
    /// The largest signed inner message (signed part + signature) a push of `suite` can carry: one byte less than
    /// the suite's largest padding bucket (docs/PROTOCOL.md §6), APNs' unless `padding` says otherwise.
    static func largestInnerMessage(suite: CryptoSuite, padding: PaddingTable = APNsAlertTransport.padding) -> Int {
        (padding.buckets(for: suite).last ?? 1) - 1
    }

    /// Says what is too large for this kind of message and what to do, with the numbers for this sender (the
    /// limit depends on the sender's user id, which every message carries, and on the recipient device's suite).
    static func tooLarge(_ message: InnerMessage, suite: CryptoSuite, padding: PaddingTable) -> SenderError {
        let size = (try? message.encodedLength()) ?? 0
        let limit = Self.largestInnerMessage(suite: suite, padding: padding)
        let measured = "the \(message.kind) is \(size) bytes once signed and the most a push carries is \(limit)"
        switch message.content {
        case .text:
            return SenderError(.tooLarge, "\(measured): shorten the text (title, body and thread id count)")
        case .receipt(let receipt):
            // Each id is 16 bytes: find how many fit for this sender.
            let perID = 16
            let fitting = receipt.messageIDs.count - (size - limit + perID - 1) / perID
            return SenderError(
                .tooLarge,
                "\(measured): a receipt from \(message.senderUserID) holds at most \(max(fitting, 0)) message ids, "
                    + "this one has \(receipt.messageIDs.count); split it into several receipts"
            )
        case .callInvite(let invite):
            return SenderError(
                .tooLarge,
                "\(measured): the invite has \(invite.groupParticipants.count) participants and "
                    + "\(invite.customHeaders.count) custom headers; send fewer participants or shorter header values"
            )
        default:
            return SenderError(.tooLarge, "\(measured)")
        }
    }
}

/// A message sealed for one device, without a push service's request around it: what a sender hands to a relay
/// (docs/RELAY.md "Submitting"), which frames it into the same uniform body and delivers it.
public struct DeviceEnvelope: Sendable {
    public let deviceID: String
    public let messageID: MessageID
    /// The sealed envelope, or why this device gets none while the others are sent.
    public let outcome: Result<SealedPush, SenderError>
}

extension PushBuilder {
    /// Seals `content` once per device of `devices` (each a device of `list`, normally ``targets(of:)`` less the
    /// devices a relay cannot deliver to), all with the same message id and signed send time.
    ///
    /// - Returns: one outcome per device, in the given order: an envelope, or why that device gets none
    ///   (`.tooLarge`, ...).
    public func sealEnvelopes(
        _ content: MessageContent,
        to list: DeviceList,
        devices: [DeviceList.Device],
        messageID: MessageID = .random(),
        sentAtMs: UInt64? = nil
    ) -> [DeviceEnvelope] {
        let sentAt = sentAtMs ?? self.clock.unsignedMs
        return devices.map { device in
            let name = "\(list.userID)'s device \"\(device.deviceID)\""
            // The padding of the device's service, which the relay checks (docs/RELAY.md "Submitting").
            let padding = (self.format(of: device) ?? self.formats[0]).padding
            let message = InnerMessage(
                messageID: messageID,
                sentAtMs: sentAt,
                senderUserID: self.identity.userID,
                senderSigningKeyID: self.identity.signingKey.publicKey.keyID,
                content: content
            )
            do throws(E2EEError) {
                let sealed = try PushPayload.seal(
                    message,
                    to: device.currentKey.publicKey,
                    signingKey: self.identity.signingKey,
                    padding: padding
                )
                return DeviceEnvelope(deviceID: device.deviceID, messageID: messageID, outcome: .success(sealed))
            } catch {
                let failure =
                    error.code == .tooLarge
                    ? Self.tooLarge(message, suite: device.currentKey.publicKey.suite, padding: padding)
                    : SenderError(error, context: "cannot seal the \(content.kind) for \(name)")
                return DeviceEnvelope(deviceID: device.deviceID, messageID: messageID, outcome: .failure(failure))
            }
        }
    }
}

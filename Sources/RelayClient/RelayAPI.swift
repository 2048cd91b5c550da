public import E2EECore
import PushTransport

/// The JSON bodies of the relay's API, version 1 (docs/RELAY.md). Shared by the server and ``RelayClient``.
public enum RelayAPI: Sendable {
    /// The delivery state of one device's push address, as a list fetch shows it.
    public enum PushState: String, Codable, Sendable, Hashable {
        /// A registered address that APNs has not rejected: senders seal to this device.
        case active
        /// APNs answered 410 Unregistered: senders stop sealing to it until the device registers again.
        case unregistered
        /// The device never registered an address with this relay.
        case none
        /// APNs refused the address for good (`failed_reason`: `BadDeviceToken`, `DeviceTokenNotForTopic`,
        /// `TopicDisallowed`), or the relay does not deliver for its topic: senders leave it out until the device
        /// registers again.
        case failed
    }

    /// One device of a fetched list: its id and its delivery state.
    public struct DeviceState: Codable, Sendable, Hashable {
        public var deviceID: String
        public var push: PushState
        public var unregisteredAtMs: Int64?
        /// Why the address failed (push state `failed`).
        public var failedReason: String?

        public init(deviceID: String, push: PushState, unregisteredAtMs: Int64? = nil, failedReason: String? = nil) {
            self.deviceID = deviceID
            self.push = push
            self.unregisteredAtMs = unregisteredAtMs
            self.failedReason = failedReason
        }

        enum CodingKeys: String, CodingKey {
            case deviceID = "device_id"
            case push
            case unregisteredAtMs = "unregistered_at_ms"
            case failedReason = "failed_reason"
        }
    }

    /// `PUT .../device-list` answer.
    public struct PublishResponse: Codable, Sendable, Hashable {
        public var listVersion: UInt64
        /// False when the identical list was already stored (an idempotent retry).
        public var stored: Bool

        public init(listVersion: UInt64, stored: Bool) {
            self.listVersion = listVersion
            self.stored = stored
        }

        enum CodingKeys: String, CodingKey {
            case listVersion = "list_version"
            case stored
        }
    }

    /// `PUT .../devices/{device}/push` body: a push address signed by the device's signing key.
    public struct PushRegistration: Codable, Sendable, Hashable {
        /// The push service (docs/PROTOCOL.md §11.1), e.g. `apns`.
        public var service: String
        /// The address, in the service's syntax (`apns`: `<topic>/<device token>`).
        public var address: String
        /// An APNs option: `production` or `development` (the APNs environment the token belongs to). Absent for a
        /// service without environments.
        public var environment: String?
        public var timestampMs: UInt64
        /// 16 random bytes, hex.
        public var nonce: String
        /// Ed25519 signature, hex (docs/RELAY.md "Registering a push address").
        public var signature: String

        public init(
            service: String,
            address: String,
            environment: String?,
            timestampMs: UInt64,
            nonce: String,
            signature: String
        ) {
            self.service = service
            self.address = address
            self.environment = environment
            self.timestampMs = timestampMs
            self.nonce = nonce
            self.signature = signature
        }

        enum CodingKeys: String, CodingKey {
            case service
            case address
            case environment
            case timestampMs = "timestamp_ms"
            case nonce
            case signature
        }
    }

    /// `PUT .../delivery-tokens` body: the user's token hashes, signed by one of its devices.
    public struct DeliveryTokenSet: Codable, Sendable, Hashable {
        public var deviceID: String
        /// SHA-256 of each delivery token, hex.
        public var tokenSHA256: [String]
        public var timestampMs: UInt64
        public var nonce: String
        public var signature: String

        public init(deviceID: String, tokenSHA256: [String], timestampMs: UInt64, nonce: String, signature: String) {
            self.deviceID = deviceID
            self.tokenSHA256 = tokenSHA256
            self.timestampMs = timestampMs
            self.nonce = nonce
            self.signature = signature
        }

        enum CodingKeys: String, CodingKey {
            case deviceID = "device_id"
            case tokenSHA256 = "token_sha256"
            case timestampMs = "timestamp_ms"
            case nonce
            case signature
        }
    }

    /// One envelope for one device of the recipient.
    public struct SubmitPush: Codable, Sendable, Hashable {
        public var deviceID: String
        /// The envelope (PROTOCOL §5), strict base64.
        public var envelope: String

        public init(deviceID: String, envelope: String) {
            self.deviceID = deviceID
            self.envelope = envelope
        }

        enum CodingKeys: String, CodingKey {
            case deviceID = "device_id"
            case envelope
        }
    }

    /// `POST .../pushes` body.
    public struct SubmitRequest: Codable, Sendable, Hashable {
        public var pushes: [SubmitPush]
        public init(pushes: [SubmitPush]) { self.pushes = pushes }
    }

    /// One accepted push.
    public struct AcceptedPush: Codable, Sendable, Hashable {
        public var deviceID: String
        /// The relay's id of the push; also the `apns-id` it is delivered with.
        public var pushID: String

        public init(deviceID: String, pushID: String) {
            self.deviceID = deviceID
            self.pushID = pushID
        }

        enum CodingKeys: String, CodingKey {
            case deviceID = "device_id"
            case pushID = "push_id"
        }
    }

    /// `POST .../pushes` answer (202).
    public struct SubmitResponse: Codable, Sendable, Hashable {
        public var pushes: [AcceptedPush]
        /// True when this idempotency key was already accepted: nothing new was queued.
        public var duplicate: Bool

        public init(pushes: [AcceptedPush], duplicate: Bool) {
            self.pushes = pushes
            self.duplicate = duplicate
        }
    }

    /// Every refusal: a reason code and a message for people.
    public struct ErrorBody: Codable, Sendable, Hashable {
        public var error: String
        public var message: String

        public init(error: String, message: String) {
            self.error = error
            self.message = message
        }
    }
}

/// A device's push address as the relay holds it: the address (docs/PROTOCOL.md §11.1) and the service's delivery
/// option, APNs' environment (`production` or `development`; nil for a service without one).
public struct RegisteredAddress: Sendable, Hashable {
    public var push: PushAddress
    public var environment: String?

    public init(push: PushAddress, environment: String?) {
        self.push = push
        self.environment = environment
    }

    /// An APNs address in `environment`.
    public init(apns: APNsAddress, environment: String) {
        self.init(push: PushAddress(apns), environment: environment)
    }

    /// The APNs environments, by the names the wire carries (`APNsEnvironment`'s).
    public static let apnsEnvironments: Set<String> = Set(APNsEnvironment.allCases.map(\.rawValue))
}

extension RegisteredAddress {
    /// The relay's rules for an address (docs/RELAY.md "Registering a push address").
    /// - Throws: `bad-push-address`, naming the rule.
    package func check() throws(RelayError) {
        if let problem = self.push.problem { throw RelayError(.badPushAddress, problem) }
        if self.push.service == .apns {
            guard let environment = self.environment, Self.apnsEnvironments.contains(environment) else {
                throw RelayError(.badPushAddress, "environment is \"production\" or \"development\" for apns")
            }
        } else if self.environment != nil {
            throw RelayError(
                .badPushAddress,
                "environment is an apns option; service \"\(self.push.service)\" has none: leave it out"
            )
        }
    }
}

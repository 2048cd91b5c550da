import APNsCommandLine
public import ArgumentParser
import CLISupport
import E2EECore
import Foundation
import Logging
import Sender

struct IdentityOptions: ParsableArguments {
    @Option(name: .long, help: "The sender's identity file (secret, mode 0600). Default: $E2EE_IDENTITY_FILE.")
    var identity: String?

    @Option(name: .long, help: "A file holding the identity's passphrase, if it is locked.")
    var passphraseFile: String?

    var identityPath: String? { self.identity ?? ProcessInfo.processInfo.environment["E2EE_IDENTITY_FILE"] }

    func load() throws(SenderError) -> Identity {
        guard let path = self.identityPath else {
            throw SenderError(.missingKey, "no identity: pass --identity FILE or set E2EE_IDENTITY_FILE")
        }
        do {
            return try Identity.load(path: path, passphrase: try self.passphrase())
        } catch let error as SenderError {
            throw error
        } catch let error as E2EEError {
            throw SenderError(error, context: "cannot load the identity \(path)")
        } catch {
            throw SenderError(.missingKey, "cannot load the identity \(path)")
        }
    }

    func passphrase() throws(SenderError) -> SecureBytes? {
        try DeviceFiles.passphrase(file: self.passphraseFile)
    }
}

/// Where the sender's pins live (docs/PROTOCOL.md §11.5): `--pins`, else `$E2EE_PINS_FILE`, else `pins.json` next
/// to the identity file.
struct PinsOptions: ParsableArguments {
    @Option(
        name: .long,
        help: """
            The pins file: each contact's user key and newest list version seen. Default: $E2EE_PINS_FILE, else \
            pins.json next to the identity file.
            """
    )
    var pins: String?

    /// The pins file for an identity at `identityPath`.
    func path(identityPath: String?) throws(SenderError) -> String {
        if let pins = self.pins ?? ProcessInfo.processInfo.environment["E2EE_PINS_FILE"] { return pins }
        guard let identityPath else {
            throw SenderError(.usage, "no pins file: pass --pins FILE, set E2EE_PINS_FILE, or pass --identity")
        }
        let folder = (identityPath as NSString).deletingLastPathComponent
        return (folder.isEmpty ? "." : folder) + "/pins.json"
    }

    /// The sender's trust in its contacts: the pins read now, first-use fingerprints on stderr.
    func trust(identityPath: String?, contacts: String?) throws(SenderError) -> ContactTrust {
        try ContactTrust(
            directory: ContactDirectory(folder: contacts),
            pinsPath: try self.path(identityPath: identityPath),
            notice: { note($0) }
        )
    }
}

struct RecipientOptions: ParsableArguments {
    @Option(name: .long, help: "The recipient: a card file (*.json) or a user id found in --contacts.")
    var to: String

    @Option(name: .long, help: "A folder of contact cards named <user id>.card.json.")
    var contacts: String?

    @Option(
        name: .long,
        help: "The device token (hex) of a recipient with one device; default: each device's APNs push address's token."
    )
    var deviceToken: String?

    @Option(name: .long, help: "The message id (32 hex digits); default: random.", transform: parseMessageID)
    var messageID: MessageID?

    @Option(
        name: .long,
        help: "For tests and demos: the signed send time (ms since 1970); a receiver judges staleness from it."
    )
    var sentAtMs: UInt64?
}

struct PushOptions: ParsableArguments {
    @Option(
        name: .long,
        help:
            "The app's bundle id, sent as apns-topic. Default: $E2EE_TOPIC, else the topic of each device's APNs address."
    )
    var topic: String?

    /// `--topic`, else `$E2EE_TOPIC`; `nil` lets each recipient card's APNs address decide.
    var override: String? { self.topic ?? ProcessInfo.processInfo.environment["E2EE_TOPIC"] }

    /// The formats of the push services `e2ee-send` seals for, with `--topic` applied.
    var formats: [any PushFormat] { SendPushServices.formats(topic: self.override) }
}

/// The push services `e2ee-send` sends to (docs/EXTENDING.md §2): the format that frames each one's pushes, and,
/// in ``DeliveryOptions/makeClient()``, the client that delivers them with `--deliver`. A second service adds its
/// format here, and its option group and client to ``DeliveryOptions``; the commands take both from here.
enum SendPushServices {
    /// Each service's format; the first frames a push to a device without a push address (`--device-token`).
    static func formats(topic: String?) -> [any PushFormat] {
        [APNsFormat(topic: topic)]
    }
}

/// A device's push address, as `keygen`, `device request`, `card` and `relay register` take it: an APNs token with
/// its app's bundle id (`--topic`, else `$E2EE_TOPIC`, else `com.example.e2ee`), or any service's address as
/// `--push-address <service>:<address>`, so that a device of another push service needs no flag of its own here.
struct PushAddressOptions: ParsableArguments {
    @Option(name: .long, help: "This device's APNs token (hex).")
    var deviceToken: String?

    @Option(
        name: .long,
        help: "The app's bundle id to publish with the token. Default: $E2EE_TOPIC, else com.example.e2ee."
    )
    var topic: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "This device's push address as <service>:<address>, instead of --device-token.",
            discussion: "apns:<bundle id>/<device token>, or an address of another push service."
        )
    )
    var pushAddress: String?

    var topicValue: String { self.topic ?? ProcessInfo.processInfo.environment["E2EE_TOPIC"] ?? "com.example.e2ee" }

    /// The address given, checked (an APNs token in lower case); nil when none is given.
    func address() throws(SenderError) -> PushAddress? {
        guard let text = self.pushAddress else {
            return try DeviceFiles.push(token: self.deviceToken, topic: self.topicValue)
        }
        guard self.deviceToken == nil, self.topic == nil else {
            throw SenderError(.usage, "give --push-address, or --device-token with --topic, not both")
        }
        return try DeviceFiles.push(address: text)
    }
}

struct DeliveryOptions: ParsableArguments {
    @Flag(name: .long, help: "Deliver to APNs and print the result instead of the request.")
    var deliver = false

    @OptionGroup var apns: APNsOptions

    @Option(name: .long, help: "Seconds to wait for APNs' answer on one stream.")
    var timeout: Int = 10

    @Option(
        name: .long,
        help:
            "Most pushes in flight on the connection (with --relay: most submits in flight); 1 sends strictly in input order (concurrent pushes may arrive in any order)."
    )
    var window: Int = 100

    /// How many pushes a pipeline keeps outstanding: twice the connection's window, so the next ones are sealed
    /// while the window is full.
    var pipelineDepth: Int { max(2 * self.window, 16) }

    func validate() throws {
        guard self.timeout > 0, self.window > 0 else {
            throw ValidationError("--timeout and --window must be positive")
        }
        guard self.apns.apnsEnvironment.count <= 1 else {
            throw ValidationError("--apns-environment: give one, development (the default) or production")
        }
    }

    /// The client of each push service (``SendPushServices``), as one: each push goes to its service's.
    func makeClient() throws(SenderError) -> PushClients {
        PushClients([.apns: try self.makeAPNsClient()])
    }

    func makeAPNsClient() throws(SenderError) -> APNsClient {
        let (keyID, teamID) = try self.apns.credentials(for: "--deliver")
        let key = try self.apns.signingKey()
        let configuration = try APNsClientConfiguration(
            environment: self.apns.endpoints(default: [.development])[0].endpoint,
            keyID: keyID,
            teamID: teamID,
            signingKey: key,
            window: self.window,
            streamTimeout: .seconds(self.timeout)
        )
        return APNsClient(configuration: configuration, logger: .standardError(label: "e2ee-send", level: .warning))
    }
}

/// `--reason` of `e2ee-send cancel`: a call cancel's reason by its name (docs/PROTOCOL.md §7.1), each with what it
/// means in `--help`. (`CallCancelReason` is a `UInt8` on the wire: as an argument of its own, its help showed the
/// number as the default and no description.)
enum CancelReasonArgument: String, CaseIterable, ExpressibleByArgument {
    case remoteEnded
    case answeredElsewhere
    case declinedElsewhere

    var reason: CallCancelReason {
        switch self {
        case .remoteEnded: .remoteEnded
        case .answeredElsewhere: .answeredElsewhere
        case .declinedElsewhere: .declinedElsewhere
        }
    }

    static var allValueDescriptions: [String: String] {
        [
            "remoteEnded": "the caller hung up (a ringing call becomes a missed call)",
            "answeredElsewhere": "another device of the callee's own user answered (sent to one's own user)",
            "declinedElsewhere": "the callee declined (sent to one's own user and to the caller)",
        ]
    }
}

extension UUID: @retroactive ExpressibleByArgument {
    init?(argument: String) { self.init(uuidString: argument) }
    var defaultValueDescription: String { self.uuidString }
}

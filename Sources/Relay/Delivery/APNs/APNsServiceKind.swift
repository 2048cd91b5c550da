import Configuration
public import E2EECore
public import Logging
public import RelayClient
import Sender

/// APNs as `e2ee-relay serve` configures it (`--apns-*`, docs/RELAY.md "Configuration"): the .p8 key, one client per
/// environment (or one for an APNs-compatible server), the app's topics, the ``APNsRules`` of its addresses and the
/// ``APNsDeliverer``.
public struct APNsServiceKind: RelayPushServiceKind {
    public init() {}

    public var service: PushService { .apns }

    public var options: [ServeOptions.Option] {
        [
            .init(name: "apns-key-file", kind: .string), .init(name: "apns-key-id", kind: .string),
            .init(name: "apns-team-id", kind: .string), .init(name: "apns-environment", kind: .strings),
            .init(name: "apns-topic", kind: .strings), .init(name: "apns-url", kind: .string),
            .init(name: "apns-ca", kind: .string), .init(name: "apns-connect-timeout", kind: .int),
            .init(name: "apns-stream-timeout", kind: .int),
        ]
    }

    public func check(_ options: ServeOptions) throws(RelayError) {
        func refuse(_ message: String) throws(RelayError) { throw RelayError(.configuration, message) }
        if options.apnsKeyID.isEmpty { try refuse("give --apns-key-id (the .p8 key's id), or E2EE_RELAY_APNS_KEY_ID") }
        if options.apnsTeamID.isEmpty { try refuse("give --apns-team-id (the team id), or E2EE_RELAY_APNS_TEAM_ID") }
        if options.apnsTopics.isEmpty {
            try refuse("give --apns-topic (the app's bundle id, repeatable): the relay delivers for these topics only")
        }
        for topic in options.apnsTopics
        where topic.isEmpty || topic.utf8.count > 255 || topic.contains(where: \.isWhitespace) {
            try refuse("--apns-topic \"\(topic)\" is not a bundle id (e.g. com.example.app)")
        }
        for environment in options.apnsEnvironments where APNsEnvironment(rawValue: environment) == nil {
            try refuse("--apns-environment is production or development, not \"\(environment)\"")
        }
        if options.apnsConnectTimeout < 1 { try refuse("--apns-connect-timeout must be at least 1") }
        if options.apnsStreamTimeout < 1 { try refuse("--apns-stream-timeout must be at least 1") }
        if options.apnsCA != nil, options.apnsURL == nil { try refuse("--apns-ca needs --apns-url") }
    }

    /// The APNs client gives up on a stream after `--apns-stream-timeout`.
    public func attemptTimeout(_ options: ServeOptions) -> (seconds: Int, name: String) {
        (options.apnsStreamTimeout, "APNs stream timeout")
    }

    public func startDescription(_ options: ServeOptions) -> String {
        let apns =
            options.apnsURL.map { "\($0) (an APNs-compatible server)" }
            ?? "Apple (\(Self.environments(options).joined(separator: ", ")))"
        return "APNs \(apns); topics \(options.apnsTopics.joined(separator: ", "))"
    }

    public func open(_ options: ServeOptions, logger: Logger) async throws(RelayError) -> OpenedPushService {
        let key: APNsSigningKey
        do throws(APNsError) {
            if let path = options.apnsKeyFile {
                key = try APNsSigningKey.load(path: path)
            } else {
                key = try APNsSigningKey.load()
            }
        } catch {
            throw RelayError(.configuration, error.message)
        }
        var clients: [APNsClient] = []
        var byEnvironment: [String: APNsClient] = [:]
        func client(_ environment: APNsEndpoint) throws(RelayError) -> APNsClient {
            do throws(APNsError) {
                let client = APNsClient(
                    configuration: try APNsClientConfiguration(
                        environment: environment,
                        keyID: options.apnsKeyID,
                        teamID: options.apnsTeamID,
                        signingKey: key,
                        streamTimeout: .seconds(options.apnsStreamTimeout),
                        connectTimeout: .seconds(options.apnsConnectTimeout),
                        retryPolicy: .never
                    ),
                    logger: logger
                )
                clients.append(client)
                return client
            } catch {
                throw RelayError(.configuration, error.message)
            }
        }
        do throws(RelayError) {
            if let url = options.apnsURL {
                let one = try client(.custom(baseURL: url, trustedCAPEMPath: options.apnsCA))
                for environment in APNsEnvironment.allCases { byEnvironment[environment.rawValue] = one }
            } else {
                for name in Self.environments(options) {
                    // Each name was checked against APNsEnvironment before the relay opened its services.
                    guard let environment = APNsEnvironment(rawValue: name) else { continue }
                    byEnvironment[name] = try client(.apple(environment))
                }
            }
        } catch {
            for client in clients { await client.shutdown() }
            throw error
        }
        let topics = Set(options.apnsTopics)
        let made = clients
        return OpenedPushService(
            rules: APNsRules(topics: topics, environments: Set(byEnvironment.keys)),
            deliverer: APNsDeliverer(clients: byEnvironment, topics: topics),
            close: { for client in made { await client.shutdown() } }
        )
    }

    /// The Apple environments delivered to, once each, sorted (with `--apns-url`, one server serves both).
    static func environments(_ options: ServeOptions) -> [String] {
        options.apnsURL == nil
            ? Set(options.apnsEnvironments).sorted() : APNsEnvironment.allCases.map(\.rawValue).sorted()
    }
}

/// The APNs options, kept in ``ServeOptions/serviceValues`` under their option names.
extension ServeOptions {
    /// `--apns-key-file`: the .p8 key; nil: the file `$APNS_KEY_PATH` names.
    public var apnsKeyFile: String? {
        get { self.serviceValues.string("apns-key-file") }
        set { self.serviceValues["apns-key-file"] = newValue.map { .string($0) } }
    }
    /// `--apns-key-id`, required.
    public var apnsKeyID: String {
        get { self.serviceValues.string("apns-key-id") ?? "" }
        set { self.serviceValues["apns-key-id"] = .string(newValue) }
    }
    /// `--apns-team-id`, required.
    public var apnsTeamID: String {
        get { self.serviceValues.string("apns-team-id") ?? "" }
        set { self.serviceValues["apns-team-id"] = .string(newValue) }
    }
    /// `--apns-environment`: Apple's environments delivered to; default both.
    public var apnsEnvironments: [String] {
        get { self.serviceValues.strings("apns-environment") ?? APNsEnvironment.allCases.map(\.rawValue) }
        set { self.serviceValues["apns-environment"] = .stringArray(newValue) }
    }
    /// `--apns-topic`: the app's bundle ids, required.
    public var apnsTopics: [String] {
        get { self.serviceValues.strings("apns-topic") ?? [] }
        set { self.serviceValues["apns-topic"] = .stringArray(newValue) }
    }
    /// `--apns-url`: an APNs-compatible server instead of Apple's.
    public var apnsURL: String? {
        get { self.serviceValues.string("apns-url") }
        set { self.serviceValues["apns-url"] = newValue.map { .string($0) } }
    }
    /// `--apns-ca`: the CA certificate `--apns-url`'s chains to.
    public var apnsCA: String? {
        get { self.serviceValues.string("apns-ca") }
        set { self.serviceValues["apns-ca"] = newValue.map { .string($0) } }
    }
    /// `--apns-connect-timeout`, seconds; default 10.
    public var apnsConnectTimeout: Int {
        get { self.serviceValues.int("apns-connect-timeout") ?? 10 }
        set { self.serviceValues["apns-connect-timeout"] = .int(newValue) }
    }
    /// `--apns-stream-timeout`, seconds; default 10.
    public var apnsStreamTimeout: Int {
        get { self.serviceValues.int("apns-stream-timeout") ?? 10 }
        set { self.serviceValues["apns-stream-timeout"] = .int(newValue) }
    }
}

extension [String: ConfigContent] {
    fileprivate func string(_ name: String) -> String? {
        if case .string(let value)? = self[name] { return value }
        return nil
    }

    fileprivate func int(_ name: String) -> Int? {
        if case .int(let value)? = self[name] { return value }
        return nil
    }

    fileprivate func strings(_ name: String) -> [String]? {
        if case .stringArray(let value)? = self[name] { return value }
        return nil
    }
}

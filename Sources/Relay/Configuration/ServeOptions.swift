public import Configuration
public import ConnectionGuard
import Foundation
import Locking

/// Every setting of `e2ee-relay serve`, resolved from its three sources with one precedence: a flag, else the
/// environment (`E2EE_RELAY_<OPTION>`: `--apns-key-id` is `E2EE_RELAY_APNS_KEY_ID`), else the configuration file
/// (`--config FILE`, a JSON object keyed by option name without the dashes: `{"apns-key-id": "…"}`), else the default
/// (docs/RELAY.md "Configuration"). Read once, through swift-configuration's `ConfigReader`.
///
/// Every value gets a decision: a value of the wrong type, an unknown key in the file, a missing required option and a
/// value out of range are each refused with the option, where it came from and what to do. Secrets are never values:
/// the APNs key and the TLS key are files named here.
public struct ServeOptions: Sendable {
    public var database = "relay.sqlite"
    /// Seconds one PostgreSQL operation may take before its request is answered 503 `storage-unavailable`.
    public var databaseTimeout = 5.0
    public var host = "127.0.0.1"
    public var port = 8443
    public var portFile: String?
    public var tlsCert: String?
    public var tlsKey: String?
    public var selfSignedTLSDir: String?
    public var workers = 4
    public var leaseSeconds = 60
    public var recipientRate = 120.0
    public var tokenRate = 60.0
    public var logLevel = "info"
    public var logFormat = "text"
    public var connections = ConnectionLimits()
    public var metricsHost: String?
    public var metricsPort: Int?
    /// The values of the push services' own options (``RelayPushServiceKind/options``), by option name, as given
    /// (a default is the service's to apply). Each service reads its own through an extension of this type
    /// (APNs: ``apnsKeyID``, ``apnsTopics``…).
    public var serviceValues: [String: ConfigContent] = [:]
    /// Where each set value came from (`--port`, `E2EE_RELAY_PORT`, `relay.json`), for the start-up line.
    public var sources: [String: String] = [:]

    /// One option: its name (the flag without dashes, the file's key) and type.
    public struct Option: Sendable, Hashable {
        public enum Kind: Sendable, Hashable { case string, int, double, strings }
        public let name: String
        public let kind: Kind

        public init(name: String, kind: Kind) {
            self.name = name
            self.kind = kind
        }

        /// The environment variable that sets it.
        public var environmentVariable: String {
            "E2EE_RELAY_" + self.name.uppercased().replacingOccurrences(of: "-", with: "_")
        }
    }

    /// The relay's own options; each push service adds its own (``RelayPushServiceKind/options``).
    public static let commonOptions: [Option] = [
        .init(name: "database", kind: .string), .init(name: "database-timeout", kind: .double),
        .init(name: "host", kind: .string), .init(name: "port", kind: .int),
        .init(name: "port-file", kind: .string), .init(name: "tls-cert", kind: .string),
        .init(name: "tls-key", kind: .string), .init(name: "self-signed-tls-dir", kind: .string),
        .init(name: "workers", kind: .int),
        .init(name: "lease-seconds", kind: .int), .init(name: "recipient-rate", kind: .double),
        .init(name: "token-rate", kind: .double), .init(name: "log-level", kind: .string),
        .init(name: "log-format", kind: .string), .init(name: "max-connections", kind: .int),
        .init(name: "tls-handshake-timeout", kind: .double), .init(name: "request-head-timeout", kind: .double),
        .init(name: "idle-timeout", kind: .double), .init(name: "request-timeout", kind: .double),
        .init(name: "metrics-host", kind: .string), .init(name: "metrics-port", kind: .int),
    ]

    public init() {}

    /// Resolves the options.
    ///
    /// - Parameters:
    ///   - flags: The values given as flags, by option name (already typed by the argument parser).
    ///   - environment: The process environment (only `E2EE_RELAY_*` is read).
    ///   - configFile: `--config`, else `E2EE_RELAY_CONFIG`: a JSON object of option names.
    ///   - pushServices: The services whose options are read and checked too.
    /// - Throws: `configuration` (`e2ee-relay serve` exits 64) saying which value is wrong, where it came from and
    ///   what to do.
    public static func resolve(
        flags: [String: ConfigContent],
        environment: [String: String],
        configFile: String?,
        pushServices: [any RelayPushServiceKind] = RelayPushServiceKinds.all
    ) throws(RelayError) -> ServeOptions {
        let known = RelayPushServiceKinds.options(pushServices)
        var flagValues: [AbsoluteConfigKey: ConfigValue] = [:]
        for (name, content) in flags { flagValues[AbsoluteConfigKey([name])] = ConfigValue(content, isSecret: false) }
        let file = configFile ?? environment["E2EE_RELAY_CONFIG"]
        var providers: [any ConfigProvider] = [
            InMemoryProvider(name: "flags", values: flagValues),
            EnvironmentVariablesProvider(environmentVariables: environment.filter { $0.key.hasPrefix("E2EE_RELAY_") })
                .prefixKeys(with: "e2ee-relay"),
        ]
        if let file {
            providers.append(InMemoryProvider(name: "file", values: try Self.fileValues(file, options: known)))
        }
        let reporter = Report()
        let config = ConfigReader(providers: providers, accessReporter: reporter)

        var options = ServeOptions()
        func string(_ name: String, _ target: inout String) {
            if let v = config.string(forKey: ConfigKey(name)) { target = v }
        }
        func optional(_ name: String) -> String? { config.string(forKey: ConfigKey(name)) }
        func int(_ name: String, _ target: inout Int) { if let v = config.int(forKey: ConfigKey(name)) { target = v } }
        func double(_ name: String, _ target: inout Double) {
            if let v = config.double(forKey: ConfigKey(name)) { target = v }
        }
        string("database", &options.database)
        double("database-timeout", &options.databaseTimeout)
        string("host", &options.host)
        int("port", &options.port)
        options.portFile = optional("port-file")
        options.tlsCert = optional("tls-cert")
        options.tlsKey = optional("tls-key")
        options.selfSignedTLSDir = optional("self-signed-tls-dir")
        for option in pushServices.flatMap(\.options) {
            let key = ConfigKey(option.name)
            let value: ConfigContent? =
                switch option.kind {
                case .string: config.string(forKey: key).map { .string($0) }
                case .int: config.int(forKey: key).map { .int($0) }
                case .double: config.double(forKey: key).map { .double($0) }
                case .strings: config.stringArray(forKey: key).map { .stringArray($0) }
                }
            options.serviceValues[option.name] = value
        }
        int("workers", &options.workers)
        int("lease-seconds", &options.leaseSeconds)
        double("recipient-rate", &options.recipientRate)
        double("token-rate", &options.tokenRate)
        string("log-level", &options.logLevel)
        string("log-format", &options.logFormat)
        var handshake = 10.0
        var head = 10.0
        var idle = 75.0
        var request = 30.0
        double("tls-handshake-timeout", &handshake)
        double("request-head-timeout", &head)
        double("idle-timeout", &idle)
        double("request-timeout", &request)
        options.connections = ConnectionLimits(
            handshakeTimeout: .seconds(handshake),
            requestHeadTimeout: .seconds(head),
            idleTimeout: .seconds(idle),
            requestTimeout: .seconds(request),
            maximumConnections: config.int(forKey: "max-connections") ?? ConnectionLimits.defaultMaximumConnections()
        )
        options.metricsHost = optional("metrics-host")
        options.metricsPort = config.int(forKey: "metrics-port")

        let (problems, sources) = reporter.take(file: file, options: known)
        if let problem = problems.first { throw RelayError(.configuration, problem) }
        options.sources = sources
        try options.check(pushServices: pushServices)
        return options
    }

    /// The checks across options (and of ranges), naming the option; each of `pushServices` checks its own.
    func check(pushServices: [any RelayPushServiceKind] = RelayPushServiceKinds.all) throws(RelayError) {
        func refuse(_ message: String) throws(RelayError) { throw RelayError(.configuration, message) }
        let files = self.tlsCert != nil || self.tlsKey != nil
        if files == (self.selfSignedTLSDir != nil) {
            try refuse("give either --tls-cert and --tls-key, or --self-signed-tls-dir")
        }
        if files, self.tlsCert == nil || self.tlsKey == nil { try refuse("--tls-cert and --tls-key go together") }
        for service in pushServices { try service.check(self) }
        if !(0...65535).contains(self.port) { try refuse("--port must be 0...65535") }
        if self.workers < 1 { try refuse("--workers must be at least 1") }
        if !(self.databaseTimeout > 0 && self.databaseTimeout <= 600) {
            try refuse("--database-timeout is seconds, more than 0 and at most 600 (default 5)")
        }
        // A lease must outlast a push in flight, or a slow answer lets another worker send the same push again.
        for service in pushServices {
            let attempt = service.attemptTimeout(self)
            if self.leaseSeconds < attempt.seconds + 5 {
                try refuse(
                    "--lease-seconds must be at least \(attempt.seconds + 5) (5 s longer than the "
                        + "\(attempt.seconds) s \(attempt.name))"
                )
            }
        }
        if !(self.recipientRate > 0 && self.tokenRate > 0) { try refuse("rates must be positive") }
        if !["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(self.logLevel) {
            try refuse(
                "--log-level is trace, debug, info, notice, warning, error or critical, not \"\(self.logLevel)\""
            )
        }
        if !["text", "json"].contains(self.logFormat) {
            try refuse("--log-format is text or json, not \"\(self.logFormat)\"")
        }
        if let problem = self.connections.problem() { try refuse(problem) }
        if let port = self.metricsPort, !(0...65535).contains(port) { try refuse("--metrics-port must be 0...65535") }
        if self.metricsHost != nil, self.metricsPort == nil { try refuse("--metrics-host needs --metrics-port") }
    }

    /// The file's values: a JSON object of known option names, each of its option's type.
    static func fileValues(
        _ path: String,
        options: [Option] = RelayPushServiceKinds.options()
    ) throws(RelayError) -> [AbsoluteConfigKey: ConfigValue] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw RelayError(.configuration, "cannot read the configuration file \(path): check the path")
        }
        guard let object = try? JSONDecoder().decode([String: FileValue].self, from: data) else {
            throw RelayError(.configuration, "the configuration file \(path) is not a JSON object of option names")
        }
        var values: [AbsoluteConfigKey: ConfigValue] = [:]
        for (key, value) in object {
            guard let option = options.first(where: { $0.name == key }) else {
                throw RelayError(
                    .configuration,
                    "\(path): unknown key \"\(key)\" (the keys are the option names without dashes, e.g. \"apns-key-id\")"
                )
            }
            let content: ConfigContent? =
                switch (option.kind, value) {
                case (.string, .string(let text)): .string(text)
                case (.int, .int(let number)): .int(number)
                case (.double, .int(let number)): .double(Double(number))
                case (.double, .double(let number)): .double(number)
                case (.strings, .strings(let list)): .stringArray(list)
                case (.strings, .string(let text)): .stringArray([text])
                default: nil
                }
            guard let content else {
                let expected: String =
                    switch option.kind {
                    case .string: "a string"
                    case .int: "a whole number"
                    case .double: "a number"
                    case .strings: "a string or a list of strings"
                    }
                throw RelayError(.configuration, "\(path): \"\(key)\" must be \(expected)")
            }
            values[AbsoluteConfigKey([key])] = ConfigValue(content, isSecret: false)
        }
        return values
    }

    /// A value of the configuration file, as JSON typed it.
    enum FileValue: Decodable {
        case string(String)
        case int(Int)
        case double(Double)
        case strings([String])
        case other

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if (try? container.decode(Bool.self)) != nil {
                self = .other
            } else if let value = try? container.decode(Int.self) {
                self = .int(value)
            } else if let value = try? container.decode(Double.self) {
                self = .double(value)
            } else if let value = try? container.decode(String.self) {
                self = .string(value)
            } else if let value = try? container.decode([String].self) {
                self = .strings(value)
            } else {
                self = .other
            }
        }
    }

    /// Collects, from the reader's accesses, the values that could not be used and where each used value came from.
    final class Report: AccessReporter, Sendable {
        private let events = PThreadMutex<[AccessEvent]>([])

        func report(_ event: AccessEvent) { self.events.withLock { $0.append(event) } }

        func take(file: String?, options: [Option]) -> (problems: [String], sources: [String: String]) {
            var problems: [String] = []
            var sources: [String: String] = [:]
            for event in self.events.withLock({ $0 }) {
                let name = event.metadata.key.components.last ?? ""
                let option = options.first { $0.name == name }
                // Providers are named by their type and the name given to them ("InMemoryProvider[flags]").
                func source(_ provider: String) -> String {
                    if provider.contains("flags") { return "--\(name)" }
                    if provider.contains("file") { return "\(file ?? "the configuration file") (\"\(name)\")" }
                    return option?.environmentVariable ?? name
                }
                for result in event.providerResults {
                    switch result.result {
                    case .failure:
                        problems.append("\(source(result.providerName)): not \(Self.expected(option?.kind))")
                    case .success(let lookup) where lookup.value != nil:
                        if sources[name] == nil { sources[name] = source(result.providerName) }
                    case .success:
                        break
                    }
                }
                if event.conversionError != nil, let from = sources[name] {
                    problems.append("\(from): not \(Self.expected(option?.kind))")
                }
            }
            return (problems, sources)
        }

        private static func expected(_ kind: Option.Kind?) -> String {
            switch kind {
            case .int?: "a whole number"
            case .double?: "a number"
            case .strings?: "a comma-separated list"
            case .string?, nil: "a string"
            }
        }
    }
}

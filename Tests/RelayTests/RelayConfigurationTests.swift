import Configuration
import Foundation
import Locking
import Logging
import Testing

@testable import Relay

/// `e2ee-relay serve`'s settings from flags, the environment and a file, one precedence; and its JSON logs
/// (docs/RELAY.md "Configuration").
@Suite("e2ee-relay serve configuration")
struct RelayConfigurationTests {
    static let required: [String: ConfigContent] = [
        "self-signed-tls-dir": .string("tls"), "apns-key-id": .string("KEY1234567"),
        "apns-team-id": .string("TEAM123456"), "apns-topic": .stringArray(["com.example.app"]),
    ]

    static func file(_ json: String) throws -> (TemporaryFolder, String) {
        let folder = try TemporaryFolder()
        try Data(json.utf8).write(to: URL(fileURLWithPath: folder.file("relay.json")))
        return (folder, folder.file("relay.json"))
    }

    @Test("a flag wins over the environment, which wins over the file, which wins over the default")
    func precedence() throws {
        let (folder, path) = try Self.file(#"{"port": 7001, "workers": 5, "host": "0.0.0.0", "token-rate": 30}"#)
        defer { folder.cleanup() }
        var flags = Self.required
        flags["port"] = .int(7003)
        let options = try ServeOptions.resolve(
            flags: flags,
            environment: ["E2EE_RELAY_PORT": "7002", "E2EE_RELAY_WORKERS": "4", "UNRELATED": "1"],
            configFile: path
        )
        #expect(options.port == 7003)  // flag
        #expect(options.workers == 4)  // environment
        #expect(options.host == "0.0.0.0")  // file
        #expect(options.tokenRate == 30)  // file
        #expect(options.leaseSeconds == 60)  // default
        #expect(options.databaseTimeout == 5)  // default
        #expect(options.sources["port"] == "--port")
        #expect(options.sources["workers"] == "E2EE_RELAY_WORKERS")
        #expect(options.sources["host"] == "\(path) (\"host\")")
    }

    @Test("every required option from the environment alone; lists comma-separated; --config from E2EE_RELAY_CONFIG")
    func environmentOnly() throws {
        let (folder, path) = try Self.file(#"{"recipient-rate": 90}"#)
        defer { folder.cleanup() }
        let options = try ServeOptions.resolve(
            flags: [:],
            environment: [
                "E2EE_RELAY_SELF_SIGNED_TLS_DIR": "tls", "E2EE_RELAY_APNS_KEY_ID": "KEY1234567",
                "E2EE_RELAY_APNS_TEAM_ID": "TEAM123456", "E2EE_RELAY_APNS_TOPIC": "com.example.app,com.example.two",
                "E2EE_RELAY_CONFIG": path, "E2EE_RELAY_DATABASE_TIMEOUT": "12.5",
            ],
            configFile: nil
        )
        #expect(options.databaseTimeout == 12.5)
        #expect(options.apnsTopics == ["com.example.app", "com.example.two"])
        #expect(options.apnsKeyID == "KEY1234567")
        #expect(options.recipientRate == 90)
    }

    @Test(
        "a wrong value is refused naming where it came from",
        arguments: [
            ([:], ["E2EE_RELAY_PORT": "eighty"], nil, "E2EE_RELAY_PORT: not a whole number"),
            ([:], [:], #"{"workers": "four"}"#, #""workers" must be a whole number"#),
            ([:], [:], #"{"apns-key": "K"}"#, #"unknown key "apns-key""#),
            ([:], [:], "[1, 2]", "is not a JSON object"),
            (["apns-topic": .stringArray([])], [:], nil, "give --apns-topic"),
            (["port": .int(70000)], [:], nil, "--port must be 0...65535"),
            (["log-format": .string("xml")], [:], nil, "--log-format is text or json"),
            (["max-connections": .int(0)], [:], nil, "--max-connections must be 1 to"),
            ([:], ["E2EE_RELAY_DATABASE_TIMEOUT": "0"], nil, "--database-timeout is seconds, more than 0"),
            ([:], [:], #"{"database-timeout": 601}"#, "--database-timeout is seconds, more than 0 and at most 600"),
        ] as [([String: ConfigContent], [String: String], String?, String)]
    )
    func refused(flags: [String: ConfigContent], environment: [String: String], json: String?, message: String) throws {
        var all = Self.required
        if !flags.isEmpty { all.merge(flags) { $1 } }
        if flags["apns-topic"] == .stringArray([]) { all["apns-topic"] = nil }
        let file = try json.map(Self.file)
        defer { file?.0.cleanup() }
        do {
            _ = try ServeOptions.resolve(flags: all, environment: environment, configFile: file?.1)
            Issue.record("accepted: \(message)")
        } catch {
            #expect(error.code == .configuration)
            #expect(error.message.contains(message), "\(error.message)")
        }
    }

    @Test("the start-up line names the store without its password, APNs, topics, workers and limits")
    func startLine() throws {
        var flags = Self.required
        flags["database"] = .string("postgres://relay:s3cret@db.example:5432/relay")
        let options = try ServeOptions.resolve(flags: flags, environment: [:], configFile: nil)
        let line = RelayServe.startLine(options)
        #expect(!line.contains("s3cret"))
        #expect(
            line.contains("store PostgreSQL postgres://relay:***@db.example:5432/relay (5 s per operation)"),
            "\(line)"
        )
        #expect(line.contains("APNs Apple (development, production)"))
        #expect(line.contains("topics com.example.app"))
        #expect(line.contains("4 delivery workers"))
        #expect(line.contains("connections at most"))
    }

    @Test("--log-format json: one JSON object per line with level, message and metadata, and no line split")
    func jsonLogs() throws {
        let lines = PThreadMutex<[String]>([])
        var logger = Logger(label: "e2ee-relay") { label in
            JSONLogHandler(label: label) { line in lines.withLock { $0.append(line) } }
        }
        logger.logLevel = .debug
        logger.info("submit accepted", metadata: ["request_id": "0123abcd", "pushes": "2"])
        logger.debug("line\nbreak", metadata: ["message": "clash"])
        let written = lines.withLock { $0 }
        #expect(written.count == 2)
        #expect(written.allSatisfy { $0.hasSuffix("\n") && $0.dropLast().firstIndex(of: "\n") == nil })
        let first = try #require(
            try JSONSerialization.jsonObject(with: Data(written[0].utf8)) as? [String: String]
        )
        #expect(first["level"] == "info")
        #expect(first["message"] == "submit accepted")
        #expect(first["label"] == "e2ee-relay")
        #expect(first["request_id"] == "0123abcd")
        #expect(first["pushes"] == "2")
        #expect(first["time"]?.hasSuffix("Z") == true)
        let second = try #require(
            try JSONSerialization.jsonObject(with: Data(written[1].utf8)) as? [String: String]
        )
        #expect(second["message"] == "line\nbreak")
        #expect(second["metadata.message"] == "clash")
    }
}

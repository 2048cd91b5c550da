// swift-tools-version:6.2
//
// E2EE call notifications: one alert push for every message kind, decrypted on the device.
//
// Layers (see README.md "Layout"):
//   CSodium            system library: libsodium through pkg-config (the only C dependency of E2EECore)
//   CLISupport         what the four executables share: --version, main (SIGPIPE ignored), stdout/stderr writers,
//                      the exit mapping helper (each executable keeps its own table), the --log-level argument
//   FilterCommandLine  e2ee-filter's commands (run, once, answer, decline), parsed and run in process by tests; the
//                      executable keeps only main and its table of exit codes
//   APNsCommandLine    the APNs provider's option group (--apns-key-file, --apns-environment...), for the tools that
//                      deliver to APNs (e2ee-send, e2ee-relay) and only those
//   SendCommandLine    e2ee-send's commands (keygen, device, contact, call, batch, deliver, relay...) as a library:
//                      the executable keeps its main and its exit-code table, which it hands to the commands
//   Locking            a pthread-mutex lock that ThreadSanitizer models (used instead of Synchronization.Mutex)
//   E2EECore           HPKE (RFC 9180) + Ed25519 on libsodium, wire format, padding, keys; the X-Wing suite on
//                      swift-crypto's HPKE; file I/O through swift-system, so it builds on Darwin as on Linux
//   PushTransport      how a push service carries an envelope: APNsAlertTransport (the APNs JSON body, 4,096-byte
//                      limit), shared by senders, the relay and the device side (no HTTP/TLS stack)
//                      and PushLine, a push as one JSON line (request lines, spool records, kept payloads)
//   Sender             building uniform APNs requests, the APNs HTTP/2 provider, token auth (re-exports PushTransport),
//                      sending through a relay, creating devices
//   LoopbackPKI        a throwaway CA and server certificate for TLS on loopback (the gateway, a self-signed relay)
//   ConnectionGuard    connections: socket deadlines and a cap for the two servers (the gateway, the relay), and
//                      how a client's failed connection is told apart (not connected, untrusted, no answer)
//   APNsGateway        a local APNs-compatible HTTP/2 + TLS server (tests, demo)
//   NotificationFilter the device side: decisions, call reporter, durable state (no HTTP/TLS stack)
//   HTTP2Client        one HTTP/2 client connection over TLS, its streams and what became of each request: under
//                      the APNs provider and RelayClient
//   RelayClient        the relay's API as a client sees it (JSON bodies, errors, signed requests, delivery tokens)
//                      and RelayClient over HTTP2Client: what senders and devices link, without the server
//   Relay              the app's push server (e2ee-relay): device lists, delivery tokens, durable queue, APNs delivery
//                      (re-exports RelayClient)
//   e2ee-*             thin executables over those libraries
// The benchmarks (Benchmarks/) and fuzz targets (Fuzz/) are nested packages depending on this one by path.
import PackageDescription

let strictSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .treatWarning("ExplicitSendable", as: .error),
    .treatAllWarnings(as: .error),
]

let package = Package(
    name: "e2ee-call-notifications",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "E2EECore", targets: ["E2EECore"]),
        .library(name: "PushTransport", targets: ["PushTransport"]),
        .library(name: "Sender", targets: ["Sender"]),
        .library(name: "NotificationFilter", targets: ["NotificationFilter"]),
        .library(name: "APNsGateway", targets: ["APNsGateway"]),
        .library(name: "RelayClient", targets: ["RelayClient"]),
        .library(name: "Relay", targets: ["Relay"]),
        .executable(name: "e2ee-send", targets: ["e2ee-send"]),
        .executable(name: "e2ee-filter", targets: ["e2ee-filter"]),
        .executable(name: "e2ee-gateway", targets: ["e2ee-gateway"]),
        .executable(name: "e2ee-relay", targets: ["e2ee-relay"]),
        .executable(name: "e2ee-vectors", targets: ["e2ee-vectors"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.1"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0"),
    ],
    targets: [
        // MARK: C libraries
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"]), .brew(["libsodium"]), .yum(["libsodium-devel"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"]), .yum(["sqlite-devel"])]
        ),

        // MARK: Libraries
        .target(
            name: "Locking",
            swiftSettings: strictSettings
        ),
        .target(
            name: "CLISupport",
            dependencies: [
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "SQLiteSupport",
            dependencies: ["CSQLite"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "E2EECore",
            dependencies: [
                "CSodium",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            exclude: ["Sodium/README.md"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "PushTransport",
            dependencies: ["E2EECore"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "E2EETestVectors",
            dependencies: ["E2EECore", "PushTransport"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "Sender",
            dependencies: [
                "Locking",
                "E2EECore",
                "ConnectionGuard",
                "PushTransport",
                "RelayClient",
                "HTTP2Client",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "APNsCommandLine",
            dependencies: [
                "Sender",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "SendCommandLine",
            dependencies: [
                "APNsCommandLine",
                "CLISupport",
                "Sender",
                "E2EECore",
                "RelayClient",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "FilterCommandLine",
            dependencies: [
                "CLISupport",
                "NotificationFilter",
                "E2EECore",
                "PushTransport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "LoopbackPKI",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "ConnectionGuard",
            dependencies: [
                "Locking",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "APNsGateway",
            dependencies: [
                "E2EECore",
                "Locking",
                "LoopbackPKI",
                "ConnectionGuard",
                "PushTransport",
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "NotificationFilter",
            dependencies: [
                "Locking",
                "E2EECore",
                "PushTransport",
                "CSQLite",
                "SQLiteSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "HTTP2Client",
            dependencies: [
                "ConnectionGuard",
                "Locking",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "RelayClient",
            dependencies: [
                "E2EECore",
                "HTTP2Client",
                "PushTransport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "Relay",
            dependencies: [
                "CLISupport",
                "Locking",
                "LoopbackPKI",
                "ConnectionGuard",
                "E2EECore",
                "PushTransport",
                "RelayClient",
                "Sender",
                "CSQLite",
                "SQLiteSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSettings
        ),

        // MARK: Executables (thin: parse arguments, call a builder in a library)
        .executableTarget(
            name: "e2ee-send",
            dependencies: ["SendCommandLine", "CLISupport", "Sender", "E2EECore"],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "e2ee-filter",
            dependencies: [
                "CLISupport",
                "FilterCommandLine",
                "NotificationFilter",
                "E2EECore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "e2ee-gateway",
            dependencies: [
                "CLISupport",
                "APNsGateway",
                "ConnectionGuard",
                "PushTransport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "e2ee-relay",
            dependencies: [
                "CLISupport",
                "Relay",
                "ConnectionGuard",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "e2ee-vectors",
            dependencies: ["E2EECore", "E2EETestVectors"],
            swiftSettings: strictSettings
        ),
        // MARK: Tests
        // What several test targets share: the one process runner, and in-memory logs.
        .target(
            name: "TestSupport",
            dependencies: [
                "E2EECore",
                "Locking",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Tests/TestSupport",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "PushTransportTests",
            dependencies: ["E2EECore", "PushTransport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "E2EECoreTests",
            dependencies: [
                "E2EECore",
                "PushTransport",
                "E2EETestVectors",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "APNsGatewayTests",
            dependencies: [
                "ConnectionGuard",
                "Locking",
                "TestSupport",
                "APNsGateway",
                "PushTransport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "SenderTests",
            dependencies: [
                "CLISupport",
                "SendCommandLine",
                "Locking",
                "TestSupport",
                "Sender",
                "RelayClient",
                "HTTP2Client",
                "LoopbackPKI",
                "E2EECore",
                "PushTransport",
                "APNsGateway",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "RelayTests",
            dependencies: [
                "ConnectionGuard",
                "LoopbackPKI",
                "TestSupport",
                "Locking",
                "NotificationFilter",
                "Relay",
                "RelayClient",
                "Sender",
                "E2EECore",
                "PushTransport",
                "APNsGateway",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strictSettings
        ),
        // Every command block of README.md and docs/*.md, run as written against the debug binaries.
        .testTarget(
            name: "DocsTests",
            dependencies: ["TestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "NotificationFilterTests",
            dependencies: [
                "Locking",
                "TestSupport",
                "NotificationFilter",
                "FilterCommandLine",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                "E2EECore",
                "PushTransport",
                "Sender",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSettings
        ),
    ]
)

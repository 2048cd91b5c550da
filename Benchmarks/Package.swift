// swift-tools-version:6.2
// The benchmark executables, kept out of the product's package (as Fuzz/ is): they call libsodium directly for the
// floor they compare against, and nothing in the product depends on them. Build and run in release, e.g.
//   swift run --package-path Benchmarks -c release e2ee-bench
//   swift run --package-path Benchmarks -c release e2ee-filter-bench 20000
//   swift run --package-path Benchmarks -c release e2ee-relay-bench --bin .build/release
//   swift run --package-path Benchmarks -c release e2ee-conn-bench --bin .build/release
// See docs/BENCHMARKS.md.
import PackageDescription

let strictSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .treatWarning("ExplicitSendable", as: .error),
    .treatAllWarnings(as: .error),
]

let package = Package(
    name: "e2ee-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "e2ee-call-notifications", path: ".."),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
    ],
    targets: [
        // libsodium for the floor, under its own module name (the product's CSodium is not a product).
        .systemLibrary(
            name: "CSodiumBench",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"]), .brew(["libsodium"]), .yum(["libsodium-devel"])]
        ),
        .executableTarget(
            name: "e2ee-bench",
            dependencies: [
                "CSodiumBench",
                .product(name: "E2EECore", package: "e2ee-call-notifications"),
                .product(name: "PushTransport", package: "e2ee-call-notifications"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "e2ee-filter-bench",
            dependencies: [
                "CSodiumBench",
                .product(name: "E2EECore", package: "e2ee-call-notifications"),
                .product(name: "PushTransport", package: "e2ee-call-notifications"),
                .product(name: "NotificationFilter", package: "e2ee-call-notifications"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // What the process benchmarks share.
        .target(name: "BenchSupport", swiftSettings: strictSettings),
        .executableTarget(
            name: "e2ee-conn-bench",
            dependencies: [
                "BenchSupport",
                .product(name: "E2EECore", package: "e2ee-call-notifications"),
                .product(name: "Relay", package: "e2ee-call-notifications"),
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "e2ee-relay-bench",
            dependencies: [
                "BenchSupport",
                .product(name: "E2EECore", package: "e2ee-call-notifications"),
                .product(name: "PushTransport", package: "e2ee-call-notifications"),
                .product(name: "Relay", package: "e2ee-call-notifications"),
            ],
            swiftSettings: strictSettings
        ),
    ]
)

// swift-tools-version:6.2
// libFuzzer targets, kept out of the main package (they have no `main`: libFuzzer provides it).
// Build and run: `make fuzz` (see the Makefile), e.g.
//   swift build --package-path Fuzz -c debug --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address --product FuzzFilter
// (one combined -sanitize flag: given as two, swiftc keeps only the last, and SwiftPM's order of the two varies)
import PackageDescription

let package = Package(
    name: "e2ee-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "e2ee-call-notifications", path: "..")],
    targets: [
        .executableTarget(
            name: "FuzzEnvelope",
            dependencies: [
                .product(name: "E2EECore", package: "e2ee-call-notifications"),
                .product(name: "PushTransport", package: "e2ee-call-notifications"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6), .unsafeFlags(["-parse-as-library"])]
        ),
        .executableTarget(
            name: "FuzzDeviceList",
            dependencies: [.product(name: "E2EECore", package: "e2ee-call-notifications")],
            swiftSettings: [.swiftLanguageMode(.v6), .unsafeFlags(["-parse-as-library"])]
        ),
        .executableTarget(
            name: "FuzzFilter",
            dependencies: [
                .product(name: "E2EECore", package: "e2ee-call-notifications"),
                .product(name: "NotificationFilter", package: "e2ee-call-notifications"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6), .unsafeFlags(["-parse-as-library"])]
        ),
    ]
)

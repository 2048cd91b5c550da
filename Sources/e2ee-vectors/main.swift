// Regenerates the project's wire-format vectors: swift run e2ee-vectors > Fixtures/e2ee-vectors.json
// `swift run e2ee-vectors fresh-xwing` prints X-Wing pushes sealed now (fresh randomness), for the independent
// implementation to open (Tools/independent/xwing_vectors.py open-fresh).
import E2EETestVectors

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

let arguments = CommandLine.arguments.dropFirst()
let bytes: [UInt8]
switch Array(arguments) {
case []: bytes = ProjectVectors.generate()
case ["fresh-xwing"]: bytes = ProjectVectors.freshXWingPushes()
default:
    let usage = Array("usage: e2ee-vectors [fresh-xwing]\n".utf8)
    _ = usage.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(64)
}
var written = 0
while written < bytes.count {
    let n = bytes[written...].withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
    if n <= 0 { exit(1) }
    written += n
}

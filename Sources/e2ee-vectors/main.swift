// Regenerates the project's wire-format vectors: swift run e2ee-vectors > Fixtures/e2ee-vectors.json
import E2EETestVectors

#if canImport(Glibc)
import Glibc
#endif

let bytes = ProjectVectors.generate()
var written = 0
while written < bytes.count {
    let n = bytes[written...].withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
    if n <= 0 { exit(1) }
    written += n
}

// C-API BOUNDARY: this file calls libsodium directly. See README.md in this folder.
import CSodium

/// The single entry to libsodium's initialisation and return-code checking.
enum Sodium {
    /// `sodium_init()` runs once per process, the first time this is touched (Swift statics are lazy and
    /// initialised exactly once, thread-safely).
    private static let initialization: Int32 = sodium_init()

    /// Makes sure libsodium is initialised. `sodium_init` returns 0 on first success and 1 if already done;
    /// -1 means the library cannot be used at all (no entropy source), which no caller can recover from.
    @inline(__always)
    static func ensureInitialized() {
        precondition(initialization >= 0, "libsodium could not be initialised (sodium_init returned -1)")
    }

    /// Checks a libsodium return code: 0 is success, anything else becomes `error`.
    ///
    /// Every libsodium call in E2EECore goes through here (or through ``checked(_:_:)``), so no return value is
    /// ignored.
    @inline(__always)
    static func check(_ returnCode: Int32, _ error: @autoclosure () -> E2EEError) throws(E2EEError) {
        guard returnCode == 0 else { throw error() }
    }

    /// Checks a libsodium return code for a call that cannot fail with valid, size-checked arguments.
    @inline(__always)
    static func check(_ returnCode: Int32, operation: StaticString) throws(E2EEError) {
        guard returnCode == 0 else {
            throw E2EEError(.cryptoFailure, "libsodium \(operation) failed (return code \(returnCode))")
        }
    }
}

extension Array where Element == UInt8 {
    /// `withUnsafeBytes` that keeps the typed `E2EEError` (the standard one is `rethrows` over `any Error`).
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws(E2EEError) -> R) throws(E2EEError) -> R {
        let result: Result<R, E2EEError> = self.withUnsafeBytes { p in Result { () throws(E2EEError) in try body(p) } }
        return try result.get()
    }
}

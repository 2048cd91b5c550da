/// What the gateway answers on one stream.
struct GatewayResponse: Sendable {
    /// The `apns-id` echoed (or generated).
    var apnsID: String
    /// `nil` for 200.
    var rejection: APNsRejection?
    /// Never answer (a silent fault).
    var silent = false
    /// The request was accepted and delivered.
    var delivered: Bool { self.rejection == nil && !self.silent }
}

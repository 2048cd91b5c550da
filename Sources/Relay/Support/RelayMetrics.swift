public import Prometheus

/// The relay's metrics, in one Prometheus registry per relay (tests run several relays in one process).
///
/// No metric carries a user, device, token or sender label: only states, statuses and scopes.
public final class RelayMetrics: Sendable {
    /// The registry `GET /metrics` renders.
    public let registry: PrometheusCollectorRegistry

    let queueQueued: Gauge
    let queueLeased: Gauge
    let pushesAccepted: Counter
    let duplicateSubmits: Counter
    let duplicateDeliveries: Counter
    let retries: Counter
    let enqueueToDelivered: DurationHistogram

    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        let depth = Self.name("queue_depth", unit: "", "Pushes in the queue by state")
        self.queueQueued = registry.makeGauge(descriptor: depth, labels: [("state", "queued")])
        self.queueLeased = registry.makeGauge(descriptor: depth, labels: [("state", "leased")])
        self.pushesAccepted = registry.makeCounter(
            descriptor: Self.name("pushes_accepted", unit: "total", "Pushes committed to the queue (202)")
        )
        self.duplicateSubmits = registry.makeCounter(
            descriptor: Self.name("duplicate_submits", unit: "total", "Submits answered from an idempotency key")
        )
        self.duplicateDeliveries = registry.makeCounter(
            descriptor: Self.name(
                "duplicate_deliveries",
                unit: "total",
                "Pushes sent again after another lease had completed them (at-least-once)"
            )
        )
        self.retries = registry.makeCounter(
            descriptor: Self.name("delivery_retries", unit: "total", "Deliveries rescheduled after 429/5xx/timeouts")
        )
        self.enqueueToDelivered = registry.makeDurationHistogram(
            descriptor: Self.name("enqueue_to_delivered", unit: "seconds", "From the 202 to APNs' 200"),
            buckets: [
                .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
                .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10),
                .seconds(30), .seconds(60), .seconds(300),
            ]
        )
    }

    static func name(_ metric: String, unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "relay", metricName: metric, unitName: unit, helpText: help)
    }

    func submit(_ outcome: String) {
        self.registry.makeCounter(
            descriptor: Self.name("submits", unit: "total", "Submits by outcome"),
            labels: [("outcome", outcome)]
        ).increment()
    }

    func rateLimited(scope: String) {
        self.registry.makeCounter(
            descriptor: Self.name("rate_limited_submits", unit: "total", "Submits refused with 429"),
            labels: [("scope", scope)]
        ).increment()
    }

    /// `status` is APNs' HTTP status, or `local-<outcome>` when APNs gave none.
    func delivery(status: String) {
        self.registry.makeCounter(
            descriptor: Self.name("deliveries", unit: "total", "Delivery attempts by APNs status"),
            labels: [("status", status)]
        ).increment()
    }

    func setQueue(queued: Int, leased: Int) {
        self.queueQueued.set(to: Double(queued))
        self.queueLeased.set(to: Double(leased))
    }

    /// The Prometheus text exposition.
    public func render() -> [UInt8] { self.registry.emitToBuffer() }
}

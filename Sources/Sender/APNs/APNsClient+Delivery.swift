import E2EECore
import Logging

extension APNsClient {
    /// One push from start to result: local checks, attempts, token regeneration, retries, registry update.
    func deliver(_ request: APNsRequest) async -> APNsResult {
        let deviceToken = request.deviceToken
        // Built only when a line is logged: most pushes log nothing above debug.
        var metadata: Logger.Metadata { Self.metadata(request) }

        guard DeviceToken.problem(deviceToken) == nil else {
            return self.finish(
                APNsResult(
                    deviceToken: deviceToken,
                    apnsID: request.apnsID,
                    attempts: 0,
                    localOutcome: .invalidDeviceToken
                ),
                metadata
            )
        }
        if let entry = await self.tokenRegistry.entry(for: deviceToken) {
            return self.finish(
                APNsResult(
                    deviceToken: deviceToken,
                    apnsID: request.apnsID,
                    attempts: 0,
                    localOutcome: .tokenInactive(since: entry.timestamp ?? 0)
                ),
                metadata
            )
        }

        if self.isShutDown {
            return self.finish(
                APNsResult(
                    deviceToken: deviceToken,
                    apnsID: request.apnsID,
                    attempts: 0,
                    localOutcome: .clientShutdown
                ),
                metadata
            )
        }

        let policy = self.configuration.retryPolicy
        var attempts = 0
        var policyAttempts = 0
        var regenerated = false
        var token = await self.tokens.currentToken()
        while true {
            if self.isShutDown {
                return self.finish(
                    APNsResult(
                        deviceToken: deviceToken,
                        apnsID: request.apnsID,
                        attempts: attempts,
                        localOutcome: .clientShutdown
                    ),
                    metadata
                )
            }
            if Task.isCancelled {
                return self.finish(
                    APNsResult(
                        deviceToken: deviceToken,
                        apnsID: request.apnsID,
                        attempts: attempts,
                        localOutcome: .cancelled
                    ),
                    metadata
                )
            }
            attempts += 1
            policyAttempts += 1
            let outcome = await self.window.withSlot { await self.exchange(request, token: token) }
            let answer: APNsExchangeAnswer
            switch outcome {
            case .answered(let value):
                answer = value
            case .local(let local):
                return self.finish(
                    APNsResult(
                        deviceToken: deviceToken,
                        apnsID: request.apnsID,
                        attempts: attempts,
                        localOutcome: local
                    ),
                    metadata
                )
            case .refused(let local):
                let result = APNsResult(
                    deviceToken: deviceToken,
                    apnsID: request.apnsID,
                    attempts: attempts,
                    localOutcome: local
                )
                // The server did not process a refused stream: sending again cannot duplicate the push.
                guard policyAttempts < policy.maxAttempts else { return self.finish(result, metadata) }
                let delay = policy.delay(beforeRetry: policyAttempts, random: Double.random(in: 0..<1))
                self.logger.notice(
                    "APNs refused the stream (REFUSED_STREAM); retrying after \(delay)",
                    metadata: metadata.merging(["apns.attempts": "\(attempts)"]) { $1 }
                )
                do {
                    try await policy.sleep(delay)
                } catch {
                    return self.finish(result, metadata)
                }
                continue
            }
            let result = APNsResult(
                deviceToken: deviceToken,
                apnsID: answer.apnsID ?? request.apnsID,
                status: answer.status,
                reason: answer.status == 200 ? nil : (answer.reason ?? .unknown),
                timestamp: answer.status == 410 ? answer.timestamp : nil,
                attempts: attempts
            )
            if answer.status != 403 { self.markTokenConfirmed() }

            if answer.status == 403, result.reason == .expiredProviderToken, !regenerated {
                regenerated = true
                policyAttempts -= 1  // the regeneration retry is not a policy retry
                guard let fresh = await self.tokens.tokenRejectedAsExpired(token) else {
                    return self.finish(result, metadata)
                }
                self.logger.notice(
                    "APNs answered ExpiredProviderToken; retrying once with a newer token",
                    metadata: metadata.merging(["apns.jwt.sha256": "\(fresh.fingerprint)"]) { $1 }
                )
                token = fresh
                continue
            }
            if answer.status == 410 {
                await self.tokenRegistry.markInactive(deviceToken, timestamp: answer.timestamp)
                return self.finish(result, metadata)
            }
            guard RetryPolicy.isRetryable(status: answer.status), policyAttempts < policy.maxAttempts else {
                return self.finish(result, metadata)
            }
            let delay = policy.delay(beforeRetry: policyAttempts, random: Double.random(in: 0..<1))
            self.logger.notice(
                "APNs answered \(answer.status); retrying after \(delay)",
                metadata: metadata.merging([
                    "apns.status": "\(answer.status)", "apns.reason": "\(result.reason ?? .unknown)",
                    "apns.attempts": "\(attempts)",
                ]) { $1 }
            )
            do {
                try await policy.sleep(delay)
            } catch {
                return self.finish(result, metadata)
            }
            // A token may have crossed its refresh age while we slept.
            token = await self.tokens.currentToken()
        }
    }

    /// A push's log metadata: its `apns-id`, never any part of its device token (a token, or a prefix of it, names a
    /// device to whoever reads the logs).
    private static func metadata(_ request: APNsRequest) -> Logger.Metadata {
        var metadata: Logger.Metadata = [:]
        if let id = request.apnsID { metadata["apns.id"] = "\(id)" }
        return metadata
    }

    private func finish(_ result: APNsResult, _ base: @autoclosure () -> Logger.Metadata) -> APNsResult {
        let level: Logger.Level = result.isSuccess ? .debug : .warning
        guard self.logger.logLevel <= level else { return result }
        var metadata = base()
        if let id = result.apnsID { metadata["apns.id"] = "\(id)" }
        metadata["apns.attempts"] = "\(result.attempts)"
        if let status = result.status { metadata["apns.status"] = "\(status)" }
        if let reason = result.reason { metadata["apns.reason"] = "\(reason)" }
        if let timestamp = result.timestamp { metadata["apns.timestamp"] = "\(timestamp)" }
        if let local = result.localOutcome {
            metadata["apns.local"] = "\(local.code)"
            self.logger.warning("push not answered by APNs: \(local.message)", metadata: metadata)
        } else if result.isSuccess {
            self.logger.debug("push accepted by APNs", metadata: metadata)
        } else {
            self.logger.warning("push refused by APNs", metadata: metadata)
        }
        return result
    }
}

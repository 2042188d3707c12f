import type { ConformanceGroup } from "./case.js";
import { decisionListingCase } from "./decision-listing.js";
import { leaseClaimCases } from "./lease-claims.js";
import { leaseListingCase } from "./lease-listing.js";
import { leaseRenewalCases } from "./lease-renewal.js";

export const leaseGroup: ConformanceGroup = {
  name: "lease",
  proves:
    "one worker holds a run at a time: a live lease refuses other claims, runs out by the store's clock, is renewed by its owner only, released on demand and by pausing or ending; the claimable listing follows it, and leaves out runs waiting for a decision",
  cases: [...leaseClaimCases, ...leaseRenewalCases, leaseListingCase, decisionListingCase],
};

from __future__ import annotations

from common.resources import Resources as R
from scheduler.batch.drf import DrfCandidate, drf_victims, job_share

TOTAL = R(cpu=10000, memory=10000, pods=100)


def test_job_share_is_dominant() -> None:
    assert job_share(R(cpu=1000, memory=5000, pods=1), TOTAL) == 0.5


def test_victim_only_when_preemptor_not_ahead() -> None:
    big = R(cpu=6000, memory=1000, pods=6)
    cands = [DrfCandidate("big", big, R(cpu=1000, pods=1)), DrfCandidate("small", R(cpu=1000, pods=1), R(cpu=1000, pods=1))]
    # preemptor share after its task: 0.2; big after losing one: 0.5 -> victim; small after: 0.0 -> not.
    assert drf_victims(R(cpu=1000, pods=1), R(cpu=1000, pods=1), cands, TOTAL) == [0]


def test_running_allocation_reduces_victim_share() -> None:
    job = R(cpu=3000, pods=3)
    cands = [DrfCandidate("j", job, R(cpu=1000, pods=1)) for _ in range(3)]
    # preemptor share 0.1; j after each loss: 0.2, 0.1 (equal -> victim), 0.0 (not).
    assert drf_victims(R(), R(cpu=1000, pods=1), cands, TOTAL) == [0, 1]


def test_equal_shares_are_victims() -> None:
    cands = [DrfCandidate("j", R(cpu=3000), R(cpu=1000))]
    assert drf_victims(R(cpu=1000), R(cpu=1000), cands, TOTAL) == [0]

package dev.hearth.storage.device;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DiskClaimsTest {

    private static final DiskIdentity DISK = new DiskIdentity("wwn", "eui.0025388b91b2c3d4", 2_000_398_934_016L);
    private static final Instant NOW = Instant.parse("2026-11-24T06:00:00Z");

    @TempDir
    Path state;

    @Test
    void readingCreatesNothing() throws Exception {
        DiskClaims claims = new DiskClaims(state.resolve("disks"));

        assertThat(claims.all()).isEmpty();
        assertThat(claims.of(DISK)).isEmpty();
        assertThat(state.resolve("disks")).doesNotExist();
    }

    @Test
    void aClaimIsReadBackAndARepeatedClaimBySameHolderStands() throws Exception {
        DiskClaims claims = new DiskClaims(state.resolve("disks"));
        DiskClaims.Claim claim = new DiskClaims.Claim(DISK, "nvme", "nvme-abc", NOW);

        assertThat(claims.claim(claim)).isEqualTo(claim);
        assertThat(claims.claim(new DiskClaims.Claim(DISK, "nvme", "nvme-abc", NOW.plusSeconds(5))).sameHolder(claim))
                .isTrue();

        assertThat(new DiskClaims(state.resolve("disks")).all()).containsExactly(claim);
        try (var files = Files.list(state.resolve("disks"))) {
            assertThat(files.map(p -> p.getFileName().toString()))
                    .containsExactly(DISK.key() + ".claim"); // no temp file left
        }
    }

    @Test
    void aDiskClaimedByOneHolderIsNotAnother() {
        DiskClaims claims = new DiskClaims(state.resolve("disks"));
        DiskClaims.Claim first = new DiskClaims.Claim(DISK, "nvme", "nvme-abc", NOW);
        DiskClaims.Claim second = new DiskClaims.Claim(DISK, "other", "other-def", NOW);

        try {
            claims.claim(first);
            assertThat(claims.claim(second)).isEqualTo(first);
            claims.release(second); // not its claim: nothing happens
            assertThat(claims.of(DISK)).contains(first);
            claims.release(first);
            assertThat(claims.of(DISK)).isEmpty();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @Test
    void ofManyConcurrentClaimsOfOneDiskExactlyOneWins() throws Exception {
        DiskClaims claims = new DiskClaims(state.resolve("disks"));
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Callable<DiskClaims.Claim>> tasks = new ArrayList<>();
            for (int i = 0; i < 32; i++) {
                DiskClaims.Claim mine = new DiskClaims.Claim(DISK, "pool", "volume-" + i, NOW);
                tasks.add(() -> claims.claim(mine));
            }
            List<DiskClaims.Claim> outcomes = new ArrayList<>();
            for (Future<DiskClaims.Claim> f : pool.invokeAll(tasks)) {
                outcomes.add(f.get());
            }
            assertThat(outcomes.stream().map(DiskClaims.Claim::holder).distinct()).hasSize(1);
            assertThat(claims.all()).containsExactly(outcomes.getFirst());
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void identityKeysAreFileNamesAndDifferForDifferentSizes() {
        DiskIdentity loop = new DiskIdentity("loop", "/var/lib/images/disk 1.img", 1 << 30);

        assertThat(loop.key()).matches("loop-[A-Za-z0-9._-]+-[0-9a-f]{12}");
        assertThat(loop.key()).isNotEqualTo(new DiskIdentity("loop", "/var/lib/images/disk 1.img", 2L << 30).key());
    }
}

package dev.hearth.storage;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;

class ClaimTest {

    @Test
    void theProvisionersExtraMetadataNamesTheClaim() {
        Map<String, String> parameters = Map.of(Claim.PVC_NAMESPACE, "shop", Claim.PVC_NAME, "data-db-0",
                Claim.PV_NAME, "pvc-3f1c2a9e-0b7d-4c1e-9a51-2d6f0e8b7c44", "hearth.dev/pool", "fast");

        assertThat(Claim.fromParameters(parameters))
                .contains(new Claim("shop", "data-db-0", "pvc-3f1c2a9e-0b7d-4c1e-9a51-2d6f0e8b7c44"));
        assertThat(Claim.fromParameters(parameters).orElseThrow()).hasToString("shop/data-db-0");
    }

    @Test
    void withoutANamespaceAndNameThereIsNoClaimAndAPvNameAloneIsNotOne() {
        assertThat(Claim.fromParameters(Map.of())).isEmpty();
        assertThat(Claim.fromParameters(Map.of(Claim.PVC_NAME, "data"))).isEmpty();
        assertThat(Claim.fromParameters(Map.of(Claim.PV_NAME, "pvc-1"))).isEmpty();
        assertThat(Claim.fromParameters(Map.of(Claim.PVC_NAMESPACE, "a", Claim.PVC_NAME, "b")))
                .contains(new Claim("a", "b", ""));
    }

    @Test
    void namesKubernetesCouldNotHaveMadeAreNotRecorded() {
        assertThat(Claim.fromParameters(Map.of(Claim.PVC_NAMESPACE, "Shop", Claim.PVC_NAME, "data"))).isEmpty();
        assertThat(Claim.fromParameters(Map.of(Claim.PVC_NAMESPACE, "a.b", Claim.PVC_NAME, "data"))).isEmpty();
        assertThat(Claim.fromParameters(Map.of(Claim.PVC_NAMESPACE, "shop", Claim.PVC_NAME, "x".repeat(254))))
                .isEmpty();
        assertThat(Claim.fromParameters(Map.of(Claim.PVC_NAMESPACE, "shop", Claim.PVC_NAME, "data",
                Claim.PV_NAME, "pv with spaces"))).contains(new Claim("shop", "data", ""));
        assertThatThrownBy(() -> new Claim("shop", "a/b", "")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'a/b'");
        assertThatThrownBy(() -> new Claim("n".repeat(64), "b", "")).isInstanceOf(IllegalArgumentException.class);
    }
}

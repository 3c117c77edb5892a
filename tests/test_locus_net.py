"""The LOCUS network: shapes, permutation and padding invariance, and the exact algebraic splits."""

import pytest

torch = pytest.importorskip("torch")

from locus.methods.locus_net import Decoder, LocusNet, Tokenizer, forward_flops, predict_flops  # noqa: E402
from locus.methods.locus_params import LocusParams  # noqa: E402

D_PHI = 12


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)
    torch.manual_seed(0)


def _net(kind="isab"):
    config = LocusParams(dim=16, heads=2, layers=2, latents=4, decoder_hidden=8, encoder_kind=kind)
    return LocusNet(config, D_PHI).eval()


def _sets(b=3, n=10):
    g = torch.Generator().manual_seed(1)
    return torch.randn(b, n, D_PHI, generator=g), (torch.rand(b, n, generator=g) > 0.5).float()


@pytest.mark.parametrize("kind", ["isab", "sab"])
def test_shapes(kind):
    net = _net(kind)
    phi, y = _sets()
    z = net.embed(phi, y)
    assert z.shape == (3, 16)
    assert net.logits(z, torch.randn(7, D_PHI)).shape == (7, 3)


@pytest.mark.parametrize("kind", ["isab", "sab"])
def test_permutation_invariance(kind):
    net = _net(kind)
    phi, y = _sets(1, 25)
    perm = torch.randperm(25)
    with torch.no_grad():
        z1, z2 = net.embed(phi, y), net.embed(phi[:, perm], y[:, perm])
    assert (z1 - z2).abs().max() < 1e-5
    assert (z1 - net.embed(phi[:, :20], y[:, :20])).abs().max() > 1e-4  # a different set does change z


@pytest.mark.parametrize("kind", ["isab", "sab"])
def test_padding_invariance_and_independence(kind):
    net = _net(kind)
    phi, y = _sets(2, 9)
    with torch.no_grad():
        alone = net.embed(phi[:1, :5], y[:1, :5])
        # model 0 has 5 real evaluations padded to 9 with garbage, batched with a full model 1
        padded_phi, padded_y = phi.clone(), y.clone()
        padded_phi[0, 5:] = 1e3
        padded_y[0, 5:] = 1.0
        mask = torch.ones(2, 9, dtype=torch.bool)
        mask[0, 5:] = False
        both = net.embed(padded_phi, padded_y, mask)
        single1 = net.embed(phi[1:], y[1:])
    assert (both[0] - alone[0]).abs().max() < 1e-5
    assert (both[1] - single1[0]).abs().max() < 1e-5


def test_tokenizer_split_equals_one_linear():
    tok = Tokenizer(D_PHI, 8)
    phi, y = torch.randn(5, D_PHI), (torch.rand(5) > 0.5).float()
    w_a, w_b = tok.query.weight[:8], tok.query.weight[8:]
    full_w = torch.cat([w_a, tok.score.weight, w_b], dim=1)  # W over [phi; y; (2y-1) phi]
    full_in = torch.cat([phi, y[:, None], (2 * y[:, None] - 1) * phi], dim=1)
    expected = full_in @ full_w.T + tok.score.bias
    got = tok(tok.project(phi)[None], y[None])[0]
    assert torch.allclose(got, expected, atol=1e-5)


def test_decoder_split_equals_mlp_on_concat():
    dec = Decoder(LocusParams(dim=6, heads=2, decoder_hidden=5, decoder_dropout=0.0), D_PHI).eval()
    z, phi = torch.randn(4, 6), torch.randn(3, D_PHI)
    u, uh = dec.query_features(phi)
    grid = dec.grid_logits(z, u, uh)  # [3, 4]
    w1 = torch.cat([dec.hidden_z.weight, dec.hidden_u.weight, dec.hidden_zu.weight], dim=1)
    for q in range(3):
        for m in range(4):
            f = torch.cat([z[m], u[q], z[m] * u[q]])
            ref = dec.out(torch.relu(w1 @ f + dec.hidden_z.bias))
            assert torch.allclose(grid[q, m], ref[0], atol=1e-5)
    pairs = dec.pair_logits(z[:1], u[None], uh[None])  # model 0 against the 3 queries
    assert torch.allclose(pairs[0], grid[:, 0], atol=1e-5)


def test_flop_counts_grow_as_expected():
    f1 = forward_flops(1024, 128, 4, 2, 64, 768)
    assert 2.0 * f1 == pytest.approx(forward_flops(2048, 128, 4, 2, 64, 768), rel=0.02)
    # the tokenizer split removes the 1,537-wide per-pair input: below the authors' 4.6 GFLOP at n = 4,096
    assert forward_flops(4096, 128, 4, 2, 64, 768) < 4.6e9
    assert predict_flops(4096, 112, 128, 64, 768) < 23.5e9 / 2


def test_the_network_is_built_from_one_parameter_object():
    """LocusNet reads its sizes from a LocusParams by attribute: the same configuration gives the same weights."""
    config = LocusParams(dim=8, heads=2, layers=1, latents=4, decoder_hidden=6, query_dropout=0.2)
    net = LocusNet(config, D_PHI)
    assert net.d_phi == D_PHI and len(net.encoder.blocks) == 1
    assert net.encoder.blocks[0].latents.shape == (1, 4, 8)
    assert net.decoder.hidden_z.weight.shape == (6, 8) and net.decoder.query_dropout.p == 0.2
    assert net.decoder.dropout.p == config.decoder_dropout
    torch.manual_seed(0)
    a = LocusNet(config, D_PHI).state_dict()
    torch.manual_seed(0)
    b = LocusNet(LocusParams.from_dict(config.as_dict()), D_PHI).state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)

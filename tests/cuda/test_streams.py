"""pymoe.interop.as_stream: which stream objects run() accepts (no GPU needed)."""
import pytest

cp = pytest.importorskip("cupy")
from pymoe.interop import as_stream  # noqa: E402


class _Protocol:                      # the CUDA stream protocol: (version, handle)
    def __cuda_stream__(self):
        return (0, 0x1234)


class _TorchLike:                     # torch.cuda.Stream exposes .cuda_stream
    cuda_stream = 0x5678


def test_stream_handles_are_borrowed_as_is():
    assert as_stream(0xABC).ptr == 0xABC
    assert as_stream(_Protocol()).ptr == 0x1234
    assert as_stream(_TorchLike()).ptr == 0x5678


def test_objects_with_ptr_pass_through():
    class S:
        ptr = 7
    s = S()
    assert as_stream(s) is s


@pytest.mark.parametrize("bad", [1.5, "stream", True, object()])
def test_other_objects_are_refused_naming_the_argument(bad):
    with pytest.raises(TypeError, match="stream: expected"):
        as_stream(bad)

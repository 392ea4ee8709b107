from tests.demo.conftest import demo_gateway, make_demo_gateway

__all__ = ["demo_gateway", "make_demo_gateway"]
